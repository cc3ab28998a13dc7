// Swagger UI over the service's own /openapi.json. Started from this file, not inline, so
// the page runs under the same Content-Security-Policy as the rest of the service.
window.addEventListener("DOMContentLoaded", () => {
  window.ui = SwaggerUIBundle({
    url: "openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
    layout: "BaseLayout",
    validatorUrl: null,
  });
});
