"""Helpers for the P4 tests: the corpus, documents, holes and a small program."""

from __future__ import annotations

from pathlib import Path

from gdg_lsp.documents import Document
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.settings import P4Settings, Settings

CORPUS_ROOT = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
if not (CORPUS_ROOT / "p4").is_dir():
    import os

    CORPUS_ROOT = Path(os.environ.get("GDG_CORPUS", "/work/shared/corpus"))
P4_CORPUS = CORPUS_ROOT / "p4"
INCLUDE = P4_CORPUS / "include"


def library_types() -> set[str]:
    """The type names core.p4 and v1model.p4 declare (what a program including them may use)."""
    from gdg_lsp.languages.p4.parser import scan_type_names
    from gdg_lsp.languages.p4.preprocess import preprocess

    types: set[str] = set()
    for name in ("core.p4", "v1model.p4"):
        types |= scan_type_names(preprocess((INCLUDE / name).read_text()).code)
    return types


def corpus_programs() -> list[Path]:
    return sorted(p for p in P4_CORPUS.rglob("*.p4") if "include" not in p.relative_to(P4_CORPUS).parts)


def workspace(include_paths=(str(INCLUDE),), roots=()) -> WorkspaceContext:
    return WorkspaceContext([Path(r) for r in roots], Settings(p4=P4Settings(include_paths=list(include_paths))))


def snapshot(analyzer, text: str, uri: str = "file:///work/test/prog.p4"):
    return Document(uri, "p4", 0, text, analyzer.parser()).snapshot()


def hole_after(analyzer, text: str, marker: str, ws: WorkspaceContext | None = None, uri: str = "file:///work/test/prog.p4"):
    """The hole with the cursor right after the first occurrence of ``marker``."""
    offset = text.index(marker) + len(marker)
    return analyzer.hole_at(snapshot(analyzer, text, uri), offset, ws or workspace())


BASIC = r'''#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x800;
#define MAX_HOPS 3

typedef bit<9>  egressSpec_t;
typedef bit<48> macAddr_t;

header ethernet_t {
    macAddr_t dstAddr;
    macAddr_t srcAddr;
    bit<16>   etherType;
}

header ipv4_t {
    bit<8>    ttl;
    bit<8>    protocol;
    bit<32>   srcAddr;
    bit<32>   dstAddr;
}

header hop_t {
    bit<1>  bos;
    bit<15> port;
}

struct metadata {
    bit<32> nhop;
}

struct headers {
    ethernet_t   ethernet;
    ipv4_t       ipv4;
    hop_t[MAX_HOPS] hops;
}

enum bit<8> Color { RED = 1, GREEN = 2 }

error { BadHop }

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets) hits;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action forward(macAddr_t dstAddr, egressSpec_t port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    table ipv4_lpm {
        key = {
            hdr.ipv4.dstAddr: lpm;
        }
        actions = {
            forward;
            drop;
        }
        size = 1024;
        default_action = drop();
    }

    apply {
        if (hdr.ipv4.isValid()) {
            ipv4_lpm.apply();
        }
        hits.count(0);
    }
}

control Later(inout headers hdr) {
    apply { }
}
'''


def hole_in_new_line(analyzer, text: str, after: str, indent: str = "        ", typed: str = "",
                     ws: WorkspaceContext | None = None, uri: str = "file:///work/test/prog.p4"):
    """Insert a line (``indent + typed``) after the line ending with ``after``; the hole at its end."""
    at = text.index(after) + len(after)
    line = indent + typed
    new = text[:at] + line + "\n" + text[at:]
    return analyzer.hole_at(snapshot(analyzer, new, uri), at + len(line), ws or workspace())
