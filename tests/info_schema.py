"""The fields of `peach2-info --json` as userlib/tools/info/README.md documents them:
validate(doc) asserts every documented field is there with its type (VM and host tests)."""

from peach2_testlib import hw

INT, STR, BOOL, NULL = int, str, bool, type(None)
PCI_FIELDS = {"address": STR, "vendor": STR, "device": STR, "class": STR, "revision": STR,
              "subsystem_vendor": STR, "subsystem_device": STR, "irq": INT,
              "config_readable": BOOL, "pcie_type": (STR, NULL), "link": (dict, NULL),
              "bars": list, "msix": (dict, NULL), "driver": (STR, NULL)}
DRIVER_FIELDS = {"device": STR, "sysfs": STR, "node_id": INT, "node_count": INT,
                 "hw_version": STR, "firmware": dict, "ports": list, "errors": dict,
                 "dma": dict, "read_proxy": dict, "problems": list}
PORT_FIELDS = {"port": STR, "link": STR, "peer_node": (INT, NULL), "peer_port": (STR, NULL),
               "tx_pkts": INT, "tx_bytes": INT, "rx_pkts": INT, "rx_bytes": INT}


def check_fields(obj, fields, where):
    assert isinstance(obj, dict), where
    for k, t in fields.items():
        assert k in obj, "%s: no field %r" % (where, k)
        assert isinstance(obj[k], t) and not (t is INT and isinstance(obj[k], bool)), \
            "%s.%s: %r is not %s" % (where, k, obj[k], t)


def validate(doc):
    check_fields(doc, {"format": STR, "version": INT, "host": STR, "status": STR,
                       "message": STR, "driver_loaded": BOOL, "cards": list}, "doc")
    assert doc["format"] == "peach2-info" and doc["version"] == 1
    assert doc["status"] in ("ok", "no-card", "no-driver")
    for k, card in enumerate(doc["cards"]):
        check_fields(card["pci"], PCI_FIELDS, "cards[%d].pci" % k)
        for b in card["pci"]["bars"]:
            check_fields(b, {"index": INT, "base": INT, "size": INT, "type": STR,
                             "prefetchable": BOOL}, "bar")
            assert b["type"] in ("mem32", "mem64", "io")
        if card["pci"]["msix"] is not None:
            check_fields(card["pci"]["msix"], {"vectors": INT, "enabled": BOOL}, "msix")
        d = card["driver"]
        if d is None:
            continue
        check_fields(d, DRIVER_FIELDS, "cards[%d].driver" % k)
        check_fields(d["firmware"], {"status": STR, "version": (INT, NULL),
                                     "routes": (INT, NULL), "topology": STR}, "firmware")
        assert [p["port"] for p in d["ports"]] == ["N", "E", "W", "S"]
        for p in d["ports"]:
            check_fields(p, PORT_FIELDS, "port")
            assert p["link"] in ("host", "up", "connected", "down")
        check_fields(d["errors"], {"count": INT, "last": INT, "last_name": STR, "status": INT,
                                   "by_code": list}, "errors")
        check_fields(d["dma"], {"channels": list, "desc_used": INT, "desc_free": INT}, "dma")
        assert len(d["dma"]["channels"]) == hw("PEACH2_DMA_CHANNELS")
        assert d["problems"] == []
