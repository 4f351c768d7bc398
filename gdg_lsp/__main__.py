from gdg_lsp.cli import main

raise SystemExit(main())
