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
             ("nvidia.container_toolkit", S), ("nouveau.loaded", bool),
             ("secure_boot.shim_validation_disabled", (bool, type(None))),
             ("secure_boot.lockdown", S), ("secure_boot.enforcing", (bool, type(None))),
             ("secure_boot.kernel_keys", (list, type(None))),
             ("kernel.target", S), ("kernel.installed", list),
             ("nvidia.installed.version", S), ("nvidia.installed.source", S),
             ("nvidia.installed.module_flavor", S), ("nvidia.installed.module_path", S),
             ("nvidia.installed.module_kernel", S), ("nvidia.installed.module_signer", S),
             ("nvidia.installed.userspace_version", S), ("nvidia.installed.libcuda_version", S),
             ("nvidia.installed.packages", list)]:
    v = get(k)
    assert isinstance(v, t), (k, v)
assert d["os"]["libc"] in ("glibc", "musl", None)
assert d["os"]["package_manager"] in ("apt", "dnf", "yum", "zypper", "tdnf", "apk", None)
assert d["nvidia"]["module_flavor"] in ("open", "proprietary", None)
assert d["secure_boot"]["lockdown"] in ("none", "integrity", "confidentiality", None)
inst = d["nvidia"]["installed"]
assert inst["module_flavor"] in ("open", "proprietary", None)
assert inst["source"] in ("module", "package", "userspace", None)
assert (inst["version"] is None) == (inst["source"] is None)
for p in inst["packages"]:
    assert isinstance(p["name"], str) and isinstance(p["version"], str), p
for k in d["kernel"]["installed"]:
    assert isinstance(k["release"], str) and isinstance(k["running"], bool) and isinstance(k["headers"], bool)
    m = k["nvidia_module"]
    assert m is None or (m["path"].startswith("/lib/modules/" + k["release"] + "/") and m["flavor"] in ("open", "proprietary", None))
assert d["kernel"]["target"] is None or d["kernel"]["target"] in [k["release"] for k in d["kernel"]["installed"]] + [d["kernel"]["release"]]
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
