import { defineConfig } from "vite";

// Served by the service under /console/; every asset is a file of this build (no CDN, no inline
// script), so the service's Content-Security-Policy can stay `default-src 'self'`.
export default defineConfig({
  base: "/console/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: { outDir: "dist", emptyOutDir: true, assetsInlineLimit: 0, modulePreload: { polyfill: false } },
  resolve: { alias: { react: "preact/compat", "react-dom": "preact/compat" } },
});
