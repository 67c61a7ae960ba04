# Attacks a sandboxed Python script makes on the machine that runs it (spec/runtime/sandbox.spec.ts):
# its arguments come as JSON on stdin, {"attack": ..., "name"|"path"|"port": ...}.
import json, os, socket, subprocess, sys

args = json.load(sys.stdin)
attack = args["attack"]
if attack == "environment":
    value = os.environ.get(args["name"])
    if value is None:
        sys.exit(f"{args['name']} is not in the environment")
    print(json.dumps(value))
elif attack == "secretFile":
    print(json.dumps(open(args["path"]).read()))
elif attack == "writeOutside":
    open(args["path"], "w").write("escaped")
    print('"written"')
elif attack == "spawnProcess":
    subprocess.Popen(["sleep", str(args["seconds"])], start_new_session=True)
    print('"spawned"')
elif attack in ("serverPort", "postgres"):
    port = args["port"] if attack == "serverPort" else 5432
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    print('"connected"')
elif attack == "unixSocket":
    s = socket.socket(socket.AF_UNIX)
    s.connect(args["socket"])
    s.close()
    print('"connected"')
elif attack == "sleepForever":
    import time
    time.sleep(3600)
elif attack == "loopForever":
    while True:
        pass
elif attack == "allocate":
    held = bytearray(4 * 1024 ** 3)
    print(len(held))
elif attack == "print":
    chunk = "x" * (1024 * 1024)
    for _ in range(100):
        sys.stdout.write(chunk)
else:
    sys.exit(f"no attack named {attack}")
