import ctypes, time, os, subprocess, sys
nv = ctypes.CDLL("libnvidia-ml.so.1")
print("init", nv.nvmlInit_v2())
dev = ctypes.c_void_p()
print("handle", nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)))
class S(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("ts", ctypes.c_ulonglong), ("sm", ctypes.c_uint), ("mem", ctypes.c_uint), ("enc", ctypes.c_uint), ("dec", ctypes.c_uint)]
for label in ("before", "holder-idle", "holder-busy"):
    if label == "holder-idle":
        p = subprocess.Popen([sys.executable, "-c", "import torch,time; x=torch.empty(2**33,dtype=torch.uint8,device='cuda'); torch.cuda.synchronize(); time.sleep(20)"])
        time.sleep(8)
    if label == "holder-busy":
        q = subprocess.Popen([sys.executable, "-c", "import torch,time; a=torch.randn(4096,4096,device='cuda'); t=time.time()\nwhile time.time()-t<8: a=a@a*0.5\ntorch.cuda.synchronize()"])
        time.sleep(6)
    n0 = ctypes.c_uint(0)
    r0 = nv.nvmlDeviceGetProcessUtilization(dev, None, ctypes.byref(n0), ctypes.c_ulonglong(0))
    arr = (S * max(n0.value, 1))()
    n = ctypes.c_uint(max(n0.value, 1))
    r = nv.nvmlDeviceGetProcessUtilization(dev, arr, ctypes.byref(n), ctypes.c_ulonglong(0))
    seen = {}
    for i in range(n.value):
        seen.setdefault(arr[i].pid, []).append(arr[i].sm)
    print(label, "size", r0, n0.value, "ret", r, "n", n.value, {k: (len(v), max(v)) for k, v in seen.items()})
p.kill(); q.kill()
