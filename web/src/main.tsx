// switchyard's web app. The dashboard's pages live under /ui/; the visual builder will add its
// routes (/ui/builder/...) to the same router and share the layout, API client and graph.
// The two pages people open most (runs, a run) are in the first chunk, so that their data is
// asked for as soon as it runs; the graph and the charts load beside it.
import { StrictMode, Suspense, lazy } from "react";
import { createRoot } from "react-dom/client";
import { Navigate, RouterProvider, createBrowserRouter } from "react-router-dom";
import { ensureSignedIn } from "./auth";
import { Layout } from "./components/Layout";
import { loadConfig } from "./config";
import RunPage from "./pages/RunPage";
import { RunsPage } from "./pages/RunsPage";
import "./styles.css";

const WorkflowsPage = lazy(() => import("./pages/WorkflowsPage"));
const WorkflowPage = lazy(() => import("./pages/WorkflowPage"));
const CostsPage = lazy(() => import("./pages/CostsPage"));
const BuilderPage = lazy(() => import("./builder/BuilderPage"));

function Later({ children }: { children: React.ReactNode }) {
  return <Suspense fallback={<p className="muted">Loading…</p>}>{children}</Suspense>;
}

function routes() {
  return createBrowserRouter(
    [
      {
        path: "/",
        element: <Layout />,
        children: [
          { index: true, element: <RunsPage /> },
          { path: "runs/:runId", element: <RunPage /> },
          { path: "workflows", element: <Later><WorkflowsPage /></Later> },
          { path: "workflows/:name", element: <Later><WorkflowPage /></Later> },
          { path: "costs", element: <Later><CostsPage /></Later> },
          { path: "builder", element: <Later><BuilderPage /></Later> },
          { path: "builder/:name", element: <Later><BuilderPage /></Later> },
          { path: "*", element: <Navigate to="/" replace /> },
        ],
      },
    ],
    { basename: "/ui" },
  );
}

const root = createRoot(document.getElementById("root")!);

// Where the app runs (config.json), and on AWS who is signed in, before the first page.
loadConfig()
  .then(ensureSignedIn)
  .then(() =>
    root.render(
      <StrictMode>
        <RouterProvider router={routes()} />
      </StrictMode>,
    ),
  )
  .catch((reason: unknown) =>
    root.render(
      <div className="problem" role="alert">
        <p>{reason instanceof Error ? reason.message : String(reason)}</p>
        <a href="/ui/">Open the dashboard again</a>
      </div>,
    ),
  );
