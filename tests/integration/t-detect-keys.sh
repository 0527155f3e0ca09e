# The JSON keys other issues and users' scripts rely on are present, with
# the types the contract says, on every fixture.
. tests/integration/lib.sh
command -v python3 >/dev/null || skip "python3 missing"
for exp in "$EXP"/detect/*.json; do
	python3 - "$exp" <<'PY' || fail "$exp breaks the detect contract"
import json, sys
d = json.load(open(sys.argv[1]))
def get(path):
    o = d
    for k in path.split("."):
        o = o[k]
    return o
S = (str, type(None))
for k, t in [("os.id", S), ("os.version_id", S), ("os.id_like", S), ("os.libc", S),
             ("os.package_manager", S), ("kernel.release", S), ("kernel.flavour", S),
             ("kernel.headers", bool), ("kernel.cmdline", S), ("cpu.arch", S),
             ("cpu.nvidia_platform", S), ("secure_boot.enabled", (bool, type(None))),
             ("cloud.provider", S), ("gpus", list), ("nvswitches", list),
             ("network.mellanox", int), ("network.infiniband", list),
             ("nvidia.loaded_version", S), ("nvidia.module_flavor", S),
             ("nvidia.userspace_version", S), ("nvidia.cuda_installs", list),
             ("nvidia.container_toolkit", S), ("nouveau.loaded", bool)]:
    v = get(k)
    assert isinstance(v, t), (k, v)
assert d["os"]["libc"] in ("glibc", "musl", None)
assert d["os"]["package_manager"] in ("apt", "dnf", "yum", "zypper", "tdnf", "apk", None)
assert d["nvidia"]["module_flavor"] in ("open", "proprietary", None)
arch = {"kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell", None}
for g in d["gpus"]:
    assert len(g["device_id"]) == 4 and g["device_id"] == g["device_id"].lower()
    assert g["subsystem_id"] is None or len(g["subsystem_id"]) == 9
    assert g["architecture"] in arch
    assert g["class"][:4] in ("0300", "0302")
    for k in ("current_gen", "max_gen", "current_width", "max_width"):
        assert g["link"][k] is None or isinstance(g["link"][k], int)
    for k in ("pci_address", "name", "compute_capability", "bound_driver", "numa_node"):
        assert k in g
for s in d["nvswitches"]:
    assert s["class"][:4] == "0680"
PY
done
echo ok
