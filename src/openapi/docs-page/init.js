// Renders /api/v1/openapi.json. validatorUrl: null keeps the viewer from sending the document to
// validator.swagger.io: no request leaves the machine (docs/openapi.md).
window.ui = SwaggerUIBundle({
  url: "/api/v1/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
