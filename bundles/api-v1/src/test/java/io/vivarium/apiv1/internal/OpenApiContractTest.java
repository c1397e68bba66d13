package io.vivarium.apiv1.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import io.swagger.v3.oas.models.OpenAPI;
import io.swagger.v3.oas.models.Operation;
import io.swagger.v3.oas.models.PathItem;
import io.swagger.v3.parser.OpenAPIV3Parser;
import io.swagger.v3.parser.core.models.ParseOptions;
import io.swagger.v3.parser.core.models.SwaggerParseResult;

import io.vivarium.api.Role;
import io.vivarium.api.http.Route;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * docs/openapi.json against the code and the README: a valid OpenAPI 3.1 document whose paths and
 * methods are exactly the routes the /v1 surface registers (plus the edge's own /healthz and
 * /version), with the roles the routes check, and the README's route table naming the same set.
 * What each route answers is checked against the document end to end (itests OpenApiContractIT).
 */
class OpenApiContractTest {
    /** Served by the http bundle's edge itself, not by a surface. */
    private static final Set<String> EDGE_ROUTES = Set.of("GET /healthz", "GET /version");
    /** Served by other bundles' surfaces; each checks its routes against the document in its own tests. */
    private static final Set<String> OTHER_SURFACE_ROUTES = Set.of("GET /metrics", "POST /v1/nodes", "GET /v1/nodes",
            "POST /v1/node/revoke/{id}", "GET /v1/node/hello", "GET /v1/node/sandboxes", "POST /v1/node/tokens",
            "POST /v1/node/register", "POST /v1/node/poll", "POST /v1/node/results", "GET /v1/node/images",
            "POST /v1/node/images/tickets", "GET /v1/node/images/file", "POST /v1/node/images/fetch");
    private static final Path ROOT = Path.of("../..");

    static OpenAPI doc;

    @BeforeAll
    static void parse() {
        ParseOptions options = new ParseOptions();
        options.setResolve(true);
        SwaggerParseResult result = new OpenAPIV3Parser().readContents(
                new String(V1Surface.openApiDocument(), StandardCharsets.UTF_8), null, options);
        assertTrue(result.getMessages() == null || result.getMessages().isEmpty(),
                "docs/openapi.json is not a valid OpenAPI document: " + result.getMessages());
        doc = result.getOpenAPI();
        assertNotNull(doc);
    }

    @Test
    void isOpenApi31WithBearerAuth() {
        assertEquals("3.1.0", doc.getOpenapi());
        var bearer = doc.getComponents().getSecuritySchemes().get("bearer");
        assertEquals("bearer", bearer.getScheme());
        assertEquals(1, doc.getSecurity().size());
        assertTrue(doc.getSecurity().get(0).containsKey("bearer"));
    }

    @Test
    void servedDocumentIsDocsOpenapiJson() throws Exception {
        assertEquals(Files.readString(ROOT.resolve("docs/openapi.json")),
                new String(V1Surface.openApiDocument(), StandardCharsets.UTF_8));
    }

    @Test
    void documentedOperationsAreExactlyTheRegisteredRoutes() {
        Set<String> registered = new TreeSet<>(EDGE_ROUTES);
        registered.addAll(OTHER_SURFACE_ROUTES);
        for (Route r : new V1Surface(null, null, null, null, null, null, null).routes()) {
            for (String method : methods(r)) {
                registered.add(method + " " + documentedPath(r));
            }
        }
        assertEquals(registered, documentedOperations());
    }

    @Test
    void documentedRolesAreTheRolesTheRoutesCheck() {
        for (Route r : new V1Surface(null, null, null, null, null, null, null).routes()) {
            Operation op = operation(documentedPath(r), methods(r).get(0));
            assertEquals(r.role().name().toLowerCase(Locale.ROOT), op.getExtensions().get("x-vivarium-role"),
                    r.method() + " " + r.template());
            assertTrue(op.getResponses().containsKey(String.valueOf(r.status())),
                    r.method() + " " + r.template() + " answers " + r.status() + " but the document does not say so");
            assertTrue(op.getResponses().containsKey("401"), r.method() + " " + r.template() + ": 401 undocumented");
            if (r.role() != Role.USER) {
                assertTrue(op.getResponses().containsKey("403"), r.method() + " " + r.template() + ": 403 undocumented");
            }
            if (r.role() == Role.OPERATOR) {
                assertEquals("#/components/responses/E403Operator", op.getResponses().get("403").get$ref(),
                        r.method() + " " + r.template() + ": its 403 should say an operator token is needed");
            }
        }
        Operation health = operation("/healthz", "GET");
        assertTrue(health.getSecurity() != null && health.getSecurity().isEmpty(), "/healthz needs no token");
    }

    @Test
    void everyOperationHasAnIdAndAOneLineSummary() {
        Set<String> ids = new TreeSet<>();
        doc.getPaths().forEach((path, item) -> item.readOperationsMap().forEach((method, op) -> {
            assertNotNull(op.getOperationId(), method + " " + path + " has no operationId");
            assertTrue(ids.add(op.getOperationId()), "operationId " + op.getOperationId() + " is used twice");
            assertTrue(op.getSummary() != null && !op.getSummary().isBlank() && !op.getSummary().contains("\n"),
                    method + " " + path + " needs a one-line summary");
        }));
    }

    @Test
    void everyErrorAnswerIsTheErrorBody() {
        doc.getPaths().forEach((path, item) -> item.readOperationsMap().forEach((method, op) ->
                op.getResponses().forEach((code, declared) -> {
                    var response = declared.get$ref() == null ? declared : doc.getComponents().getResponses()
                            .get(declared.get$ref().substring("#/components/responses/".length()));
                    if (code.startsWith("4") || code.startsWith("5")) {
                        var media = response.getContent() == null ? null : response.getContent().get("application/json");
                        assertNotNull(media, method + " " + path + " " + code + " has no JSON body");
                        String ref = media.getSchema().get$ref();
                        assertEquals("#/components/schemas/Error", ref, method + " " + path + " " + code);
                    }
                })));
    }

    @Test
    void readmeRouteTableNamesExactlyTheDocumentedOperations() throws Exception {
        String readme = Files.readString(ROOT.resolve("README.md"));
        int start = readme.indexOf("\n## API\n");
        assertTrue(start >= 0, "README has no '## API' section");
        String table = readme.substring(start).lines().dropWhile(l -> !l.startsWith("|"))
                .takeWhile(l -> l.startsWith("|")).collect(Collectors.joining("\n"));
        Matcher m = Pattern.compile("`(GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS) (/[^`?\\s]*)[^`]*`").matcher(table);
        Set<String> listed = new TreeSet<>();
        while (m.find()) {
            listed.add(m.group(1) + " " + m.group(2));
        }
        assertFalse(listed.isEmpty(), "no routes found in the README's API table");
        assertEquals(documentedOperations(), listed, "README's API table and docs/openapi.json differ");
    }

    /** The methods a route answers, as the document lists them: every one for a route that passes requests on. */
    private static List<String> methods(Route r) {
        return r.method().equals(Route.ANY_METHOD) ? List.of("GET", "PUT", "POST", "DELETE", "PATCH", "HEAD", "OPTIONS")
                : List.of(r.method());
    }

    /** The route's path as the document has it: a tail {@code {name*}} is {@code {name}}. */
    private static String documentedPath(Route r) {
        return "/v1" + r.template().replaceAll("\\{(\\w+)\\*}", "{$1}");
    }

    private static Set<String> documentedOperations() {
        Set<String> ops = new TreeSet<>();
        doc.getPaths().forEach((path, item) -> item.readOperationsMap().keySet()
                .forEach(method -> ops.add(method.name() + " " + path)));
        return ops;
    }

    private static Operation operation(String path, String method) {
        PathItem item = doc.getPaths().get(path);
        assertNotNull(item, path + " is not documented");
        Operation op = item.readOperationsMap().get(PathItem.HttpMethod.valueOf(method));
        assertNotNull(op, method + " " + path + " is not documented");
        return op;
    }
}
