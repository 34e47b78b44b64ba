// A CommonJS consumer: require() of the ESM package (Node >= 20.19), every entry point.
const server = require("@golem-stream/server");
const testing = require("@golem-stream/server/testing");
for (const [name, value] of [
  ["startEmbeddedServer", server.startEmbeddedServer],
  ["Keyring", server.Keyring],
  ["storeContract", testing.storeContract],
]) {
  if (typeof value !== "function") throw new Error(`${name} is ${typeof value}`);
}
const keyring = server.Keyring.generate();
console.log(`required ${Object.keys(server).length} exports, keyring ${keyring.toJSON ? "generated" : "?"}`);
