"""``gdg.batchSize`` changed while the server runs takes effect at once, over the loaded weights."""

from __future__ import annotations

from gdg_lsp.backends.lean.batching import SlotPool
from gdg_lsp.backends.lean.llama import FastLlamaBackend
from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.server import create_server
from tests.perf.test_perf_batching import _weights

URI = "file:///batch.py"


async def _configure(server: InProcessServer, batch_size: int) -> None:
    server.notify("workspace/didChangeConfiguration", {"settings": {"gdg": {"batchSize": batch_size, "maxTokens": 4}}})
    await server.settle(0.3)


async def test_batch_size_changes_apply_without_a_reload(tiny_vocab):
    weights = _weights(tiny_vocab, max_positions=2048)
    loads = []

    def resolve(settings, progress):
        def load(device):
            loads.append(device)
            return FastLlamaBackend(weights, tiny_vocab, "lean-tiny")

        return "lean-tiny", load

    server_obj = create_server(dev=True)
    server_obj.session.worker.resolve_model = resolve
    async with InProcessServer(server=server_obj, initialization_options={"batchSize": 4, "maxTokens": 4}) as server:
        assert await server.wait_model() == "ready"
        worker = server_obj.session.worker
        assert isinstance(worker.service.backend, SlotPool) and worker.service.concurrency == 4
        await _configure(server, 1)
        assert isinstance(worker.service.backend, FastLlamaBackend) and worker.service.concurrency == 1
        assert worker.service.backend.weights is weights  # the same weights: nothing was loaded again
        await _configure(server, 3)
        assert isinstance(worker.service.backend, SlotPool) and worker.service.concurrency == 3
        assert loads == ["cpu"]
        server.open(URI, "def f(ab, xy):\n    \n")
        answer = await server.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": URI}, "position": {"line": 1, "character": 4}, "context": {"triggerKind": 1}})
        assert "result" in answer and worker.stats.decodes == 1  # and it decodes with the new pool
