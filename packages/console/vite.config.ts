/**
 * The console page: src/web/index.html and its modules, bundled with the
 * client's browser build into static files under dist/www (hashed names
 * under assets/), which src/node serves. No framework, no runtime CDN.
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

export default defineConfig({
  root: fileURLToPath(new URL("src/web", import.meta.url)),
  base: "./",
  logLevel: "warn",
  build: {
    outDir: fileURLToPath(new URL("dist/www", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    // One small page: inlining nothing keeps the CSP at script-src 'self'.
    assetsInlineLimit: 0,
  },
});
