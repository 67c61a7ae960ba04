# Attacks a sandboxed shell script makes on the machine that runs it (spec/runtime/sandbox.spec.ts):
# its arguments come as JSON on stdin, {"attack": ..., "name"|"path"|"port": ...}.
set -e
args=$(cat)
field() { printf '%s' "$args" | sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\)\"\{0,1\}.*/\1/p"; }
case "$(field attack)" in
  environment)
    name=$(field name)
    value=$(printenv "$name" || true)
    [ -n "$value" ] || { echo "$name is not in the environment" >&2; exit 1; }
    printf '"%s"' "$value" ;;
  secretFile) cat "$(field path)" ;;
  writeOutside) echo escaped > "$(field path)"; echo '"written"' ;;
  spawnProcess) sleep "$(field seconds)" & echo '"spawned"' ;;
  serverPort) exec 3<>"/dev/tcp/127.0.0.1/$(field port)"; echo '"connected"' ;;
  postgres) exec 3<>/dev/tcp/127.0.0.1/5432; echo '"connected"' ;;
  unixSocket) socket=$(field socket); [ -S "$socket" ] || { echo "$socket: no such socket" >&2; exit 1; }; echo '"a socket is there"' ;;
  sleepForever) sleep 3600 ;;
  loopForever) while :; do :; done ;;
  allocate) dd if=/dev/zero of=/dev/null bs=4G count=1 ;;
  print) head -c 104857600 /dev/zero | tr '\0' 'x' ;;
  *) echo "no attack named $(field attack)" >&2; exit 64 ;;
esac
