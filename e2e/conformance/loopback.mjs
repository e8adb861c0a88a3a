// Preloaded (node --import) into server-everything's streamable HTTP mode,
// which listens on a port on every interface: a server given a port and no
// host listens on 127.0.0.1 instead, so the conformance runs stay on this
// machine.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const isPort = typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
  if (isPort && typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  return listen.apply(this, args);
};
