// The dashboard's page routing at CloudFront's edge (a CloudFront Function, cloudfront-js-2.0,
// on the viewer request of the pages' behaviour): what `switchyard dev` does in
// layers/switchyard/dashboard/static.py. `/` and `/ui` go to `/ui/`; under `/ui/`, `assets/...`
// and a top-level file (`/ui/config.json`, `/ui/favicon.svg`) are the bucket's objects, and any
// other path (`/ui/`, `/ui/runs/<run id>`, `/ui/costs`) is a page of the app: index.html, whose
// router draws it. Nothing else is served from the bucket. tests/infra/test_dashboard.py runs
// this file under node.
function handler(event) {
  var request = event.request;
  var uri = request.uri;
  if (uri === "/" || uri === "/ui") {
    return {
      statusCode: 307,
      statusDescription: "Temporary Redirect",
      headers: { location: { value: "/ui/" }, "cache-control": { value: "no-cache" } },
    };
  }
  if (uri.indexOf("/ui/") !== 0) {
    return { statusCode: 404, statusDescription: "Not Found" };
  }
  var rest = uri.substring(4);
  if (rest.indexOf("assets/") === 0 && rest.length > 7) {
    return request;
  }
  if (rest.indexOf("/") === -1 && rest.indexOf(".") > 0) {
    return request;
  }
  request.uri = "/ui/index.html";
  return request;
}
