// The app is served by the switchyard server at /ui/ (and from S3/CloudFront on AWS under the
// same path); the data API is /api/dashboard on the same origin. `npm run dev` proxies it.
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

export default defineConfig({
  base: "/ui/",
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 800 },
  server: { proxy: { "/api": process.env.SWITCHYARD_URL ?? "http://127.0.0.1:8080" } },
});
