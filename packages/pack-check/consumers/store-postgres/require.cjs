// A CommonJS consumer of store-postgres (require() of ESM, Node >= 20.19).
const { PostgresSessionStore } = require("@golem-stream/store-postgres");

if (typeof PostgresSessionStore?.connect !== "function") throw new Error("PostgresSessionStore.connect missing");
console.log("required PostgresSessionStore");
