// Vite imports stylesheets for their side effect (bundled into the page's CSS).
declare module "*.css";
