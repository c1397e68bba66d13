package io.vivarium.itests.e2e;

import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import com.fasterxml.jackson.databind.JsonNode;
import com.networknt.schema.InputFormat;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.dialect.Dialects;

/**
 * Checks HTTP exchanges against an OpenAPI 3.1 document: the path and method must be documented,
 * a JSON request body must match the operation's request schema and required query parameters be
 * present, and the answer's status must be one the operation lists, with the documented content
 * type and a body that matches its schema (JSON Schema 2020-12 in the OpenAPI 3.1 dialect, by
 * networknt's json-schema-validator). Records which operations were exercised.
 */
final class OpenApiContract {
    private static final String DOC_URI = "https://vivarium.invalid/openapi.json";
    private static final Set<String> METHODS = Set.of("get", "put", "post", "delete", "patch", "head", "options");

    private final JsonNode doc;
    private final SchemaRegistry schemas;
    private final Set<String> exercised = new TreeSet<>();

    OpenApiContract(byte[] document) throws java.io.IOException {
        this.doc = Api.JSON.readTree(document);
        String text = new String(document, StandardCharsets.UTF_8);
        this.schemas = SchemaRegistry.withDefaultDialect(Dialects.getOpenApi31(),
                b -> b.schemas(Map.of(DOC_URI, text)));
    }

    /** Every documented operation, as "METHOD /template". */
    Set<String> operations() {
        Set<String> ops = new TreeSet<>();
        doc.get("paths").fields().forEachRemaining(p -> p.getValue().fieldNames().forEachRemaining(m -> {
            if (METHODS.contains(m)) {
                ops.add(m.toUpperCase() + " " + p.getKey());
            }
        }));
        return ops;
    }

    Set<String> exercised() {
        return exercised;
    }

    /**
     * Checks one exchange; returns the problems found (empty when it conforms). {@code requestBody}
     * is what was sent (null for none), {@code requestType} its content type.
     */
    List<String> check(String method, String pathAndQuery, String requestType, byte[] requestBody, HttpResponse<byte[]> response) {
        List<String> problems = new ArrayList<>();
        URI uri = URI.create(pathAndQuery);
        String template = template(uri.getPath());
        if (template == null) {
            problems.add(uri.getPath() + " matches no documented path");
            return problems;
        }
        String ptr = "/paths/" + escape(template) + "/" + method.toLowerCase();
        JsonNode op = doc.at(ptr);
        if (op.isMissingNode()) {
            problems.add(method + " " + template + " is not documented");
            return problems;
        }
        String what = method + " " + template + " → " + response.statusCode();
        checkRequest(op, ptr, uri, requestType, requestBody, what, problems);

        String code = String.valueOf(response.statusCode());
        JsonNode answer = op.path("responses").path(code);
        String answerPtr = ptr + "/responses/" + code;
        if (answer.isMissingNode()) {
            problems.add(what + ": status " + code + " is not documented (documented: "
                    + names(op.path("responses")) + ")");
            return problems;
        }
        if (answer.has("$ref")) {
            answerPtr = answer.get("$ref").asText().substring(1);
            answer = doc.at(answerPtr);
        }
        JsonNode content = answer.path("content");
        byte[] body = response.body();
        if (content.isMissingNode() || content.isEmpty()) {
            if (body.length > 0) {
                problems.add(what + ": documented without a body, got " + body.length + " bytes");
            }
        } else {
            String type = response.headers().firstValue("Content-Type").orElse("").split(";")[0].strip();
            if (!content.has(type)) {
                problems.add(what + ": Content-Type " + type + " is not documented (" + names(content) + ")");
            } else if (type.equals("application/json")) {
                validate(answerPtr + "/content/application~1json/schema", body, what + " response", problems);
            }
        }
        exercised.add(method + " " + template);
        return problems;
    }

    private void checkRequest(JsonNode op, String ptr, URI uri, String requestType, byte[] requestBody, String what, List<String> problems) {
        JsonNode params = op.path("parameters");
        List<JsonNode> all = new ArrayList<>();
        params.forEach(all::add);
        doc.at(ptr.substring(0, ptr.lastIndexOf('/'))).path("parameters").forEach(all::add);
        for (JsonNode p : all) {
            JsonNode param = p.has("$ref") ? doc.at(p.get("$ref").asText().substring(1)) : p;
            if (param.path("in").asText().equals("query") && param.path("required").asBoolean()
                    && (uri.getRawQuery() == null || !(("&" + uri.getRawQuery()).contains("&" + param.get("name").asText() + "=")))) {
                problems.add(what + ": required query parameter " + param.get("name").asText() + " was not sent");
            }
        }
        JsonNode requestBodySpec = op.path("requestBody");
        boolean sent = requestBody != null && requestBody.length > 0;
        if (requestBodySpec.isMissingNode()) {
            if (sent) {
                problems.add(what + ": a request body was sent, the operation documents none");
            }
            return;
        }
        if (!sent) {
            if (requestBodySpec.path("required").asBoolean()) {
                problems.add(what + ": the request body is required");
            }
            return;
        }
        if ("application/json".equals(requestType)) {
            if (!requestBodySpec.path("content").has("application/json")) {
                problems.add(what + ": a JSON request body was sent, the operation documents " + names(requestBodySpec.path("content")));
            } else {
                validate(ptr + "/requestBody/content/application~1json/schema", requestBody, what + " request", problems);
            }
        }
    }

    private void validate(String pointer, byte[] body, String what, List<String> problems) {
        Schema schema = schemas.getSchema(SchemaLocation.of(DOC_URI + "#" + pointer));
        String json = new String(body, StandardCharsets.UTF_8);
        try {
            schema.validate(json, InputFormat.JSON).forEach(e -> problems.add(what + ": " + e.getMessage() + " in " + json));
        } catch (RuntimeException e) {
            problems.add(what + ": not JSON (" + e.getMessage() + "): " + json);
        }
    }

    /** The documented path template that a concrete path matches, literal segments first. */
    String template(String path) {
        String[] segments = path.split("/", -1);
        String best = null;
        for (Iterator<String> it = doc.get("paths").fieldNames(); it.hasNext(); ) {
            String t = it.next();
            String[] ts = t.split("/", -1);
            if (ts.length != segments.length) {
                continue;
            }
            boolean match = true;
            for (int i = 0; i < ts.length && match; i++) {
                match = ts[i].startsWith("{") ? !segments[i].isEmpty() : ts[i].equals(segments[i]);
            }
            if (match && (best == null || t.indexOf('{') < 0)) {
                best = t;
            }
        }
        return best;
    }

    private static String names(JsonNode object) {
        List<String> names = new ArrayList<>();
        object.fieldNames().forEachRemaining(names::add);
        return String.join(", ", names);
    }

    private static String escape(String template) {
        return template.replace("~", "~0").replace("/", "~1");
    }
}
