#!/usr/bin/env bash
# A throwaway PostgreSQL server for the SQL tests (Debian's postgresql package).
#
#   source .ci/setup.d/postgres.sh     installs if needed, starts, exports GDG_TEST_PG_DSN
#                                      (.ci/run sources every .ci/setup.d/*.sh)
#   bash .ci/setup.d/postgres.sh       the same, prints the DSN (and writes it to the DSN file)
#   bash .ci/setup.d/postgres.sh stop  stops the server this script started
#
# The cluster lives in a temporary folder (GDG_PG_DIR to choose it), listens on
# 127.0.0.1 only, trusts local connections and runs without fsync: it holds
# nothing but test schemas. The DSN is also written to GDG_TEST_PG_DSN_FILE
# (default /tmp/gdg-test-pg.dsn) so a process that did not source this script
# can read it. The tests introspect it read-only; they create their own
# databases through a separate connection.

_gdg_pg_main() {
    local state="${GDG_TEST_PG_STATE:-/tmp/gdg-test-pg.state}"
    local dsn_file="${GDG_TEST_PG_DSN_FILE:-/tmp/gdg-test-pg.dsn}"
    local as_postgres=()
    if [ "$(id -u)" = 0 ]; then as_postgres=(su postgres -s /bin/sh -c); fi
    _run() { if [ ${#as_postgres[@]} -gt 0 ]; then "${as_postgres[@]}" "$*"; else sh -c "$*"; fi; }

    if [ "${1:-}" = "stop" ]; then
        [ -f "$state" ] || { echo "postgres.sh: nothing to stop" >&2; return 0; }
        local data; data="$(sed -n 1p "$state")"; local bin; bin="$(sed -n 2p "$state")"
        _run "'$bin/pg_ctl' -D '$data' -m fast -w stop" >/dev/null && rm -f "$state" "$dsn_file"
        return $?
    fi

    if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
        if [ "$(id -u)" != 0 ]; then echo "postgres.sh: PostgreSQL is not installed and this is not root" >&2; return 1; fi
        (export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql >/dev/null) || {
            echo "postgres.sh: apt-get install postgresql failed" >&2; return 1; }
    fi
    local bin; bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"

    if [ -f "$state" ] && _run "'$bin/pg_ctl' -D '$(sed -n 1p "$state")' status" >/dev/null 2>&1; then
        export GDG_TEST_PG_DSN; GDG_TEST_PG_DSN="$(cat "$dsn_file")"
        echo "$GDG_TEST_PG_DSN"
        return 0
    fi

    local dir="${GDG_PG_DIR:-}"
    if [ -z "$dir" ]; then dir="$(mktemp -d /tmp/gdg-pg.XXXXXX)"; fi
    mkdir -p "$dir"
    if [ ${#as_postgres[@]} -gt 0 ]; then chown postgres:postgres "$dir"; fi
    local port; port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    _run "'$bin/initdb' -D '$dir/data' -U postgres -A trust --no-sync -E UTF8 --locale=C.UTF-8" >"$dir/initdb.log" 2>&1 || {
        echo "postgres.sh: initdb failed (see $dir/initdb.log)" >&2; return 1; }
    _run "'$bin/pg_ctl' -D '$dir/data' -l '$dir/server.log' -w -t 60 -o \"-p $port -k '$dir' -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off\" start" >/dev/null || {
        echo "postgres.sh: the server did not start (see $dir/server.log)" >&2; return 1; }
    printf '%s\n%s\n' "$dir/data" "$bin" > "$state"
    export GDG_TEST_PG_DSN="postgresql://postgres@127.0.0.1:$port/postgres"
    echo "$GDG_TEST_PG_DSN" > "$dsn_file"
    echo "$GDG_TEST_PG_DSN"
}

_gdg_pg_status=0
_gdg_pg_main "$@" || _gdg_pg_status=$?
unset -f _gdg_pg_main _run 2>/dev/null || true
if [ "${BASH_SOURCE[0]}" = "$0" ]; then exit $_gdg_pg_status; fi
# sourced (by .ci/run, under set -e): a failure is reported, and the PostgreSQL
# tests then fail with the reason instead of the whole run stopping here
if [ "$_gdg_pg_status" != 0 ]; then echo "postgres.sh: no PostgreSQL server for the tests" >&2; fi
true
