package io.vivarium.itests.e2e;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
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
 * Judges HTTP exchanges by an OpenAPI 3.1 document. The request: its path and method must be
 * documented, its path and query parameters match their schemas (no undocumented query parameter,
 * every required one present), a body be sent only where the operation takes one, in a documented
 * content type, and a JSON body match the request schema. The answer: its status must be one the
 * operation lists, with the documented content type and a body that matches its schema (JSON
 * Schema 2020-12 in the OpenAPI 3.1 dialect, by networknt's json-schema-validator); the answer to a
 * request on no documented operation must still be the document's error body. The e2e {@link Api}
 * client judges every exchange it makes with {@link #docs()}.
 */
final class OpenApiContract {
    private static final String DOC_URI = "https://vivarium.invalid/openapi.json";
    private static final Set<String> METHODS = Set.of("get", "put", "post", "delete", "patch", "head", "options");
    private static final String ERROR_SCHEMA = "/components/schemas/Error";
    private static OpenApiContract docs;

    private final JsonNode doc;
    private final SchemaRegistry schemas;

    /** What the document says of one exchange: the operation it is ({@code null} for none) and what it does not allow. */
    record Verdict(String operation, List<String> request, List<String> answer) {
        boolean conforms() {
            return request.isEmpty() && answer.isEmpty();
        }

        List<String> problems() {
            List<String> all = new ArrayList<>(request);
            all.addAll(answer);
            return all;
        }
    }

    OpenApiContract(byte[] document) throws IOException {
        this.doc = Api.JSON.readTree(document);
        String text = new String(document, StandardCharsets.UTF_8);
        this.schemas = SchemaRegistry.withDefaultDialect(Dialects.getOpenApi31(),
                b -> b.schemas(Map.of(DOC_URI, text)));
    }

    /** The contract in the tree, docs/openapi.json, which the daemon serves (OpenApiContractIT checks that it is the same). */
    static synchronized OpenApiContract docs() {
        if (docs == null) {
            try {
                docs = new OpenApiContract(Files.readAllBytes(Path.of("../docs/openapi.json")));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read the contract ../docs/openapi.json", e);
            }
        }
        return docs;
    }

    /** Every documented operation, as "METHOD /template". */
    Set<String> operations() {
        Set<String> ops = new TreeSet<>();
        doc.get("paths").properties().forEach(p -> p.getValue().fieldNames().forEachRemaining(m -> {
            if (METHODS.contains(m)) {
                ops.add(m.toUpperCase() + " " + p.getKey());
            }
        }));
        return ops;
    }

    /** The content types of the operation's request body, empty when it takes none. */
    List<String> requestTypes(String operation) {
        List<String> types = new ArrayList<>();
        operation(operation).path("requestBody").path("content").fieldNames().forEachRemaining(types::add);
        return types;
    }

    /** Whether {@code operation} ("METHOD /template") requires a request body. */
    boolean requiresBody(String operation) {
        return operation(operation).path("requestBody").path("required").asBoolean();
    }

    /** The query parameters {@code operation} requires. */
    List<String> requiredQueryParameters(String operation) {
        String[] mt = operation.split(" ", 2);
        List<String> names = new ArrayList<>();
        for (Param p : parameters(pointer(mt[1], mt[0]))) {
            if (p.in().equals("query") && p.node().path("required").asBoolean()) {
                names.add(p.name());
            }
        }
        return names;
    }

    /**
     * Judges one exchange. {@code target} is the request target as sent (path and query, still
     * percent-encoded), {@code requestBody} what was sent (null for none) as {@code requestType},
     * {@code contentType} the answer's Content-Type header (null for none).
     */
    Verdict judge(String method, String target, String requestType, byte[] requestBody, int status, String contentType,
            byte[] body) {
        List<String> request = new ArrayList<>();
        List<String> answer = new ArrayList<>();
        int q = target.indexOf('?');
        String rawPath = q < 0 ? target : target.substring(0, q);
        String rawQuery = q < 0 ? null : target.substring(q + 1);
        String template = template(rawPath);
        JsonNode op = template == null ? null : doc.at(pointer(template, method));
        if (op == null || op.isMissingNode()) {
            request.add(template == null ? rawPath + " matches no documented path" : method + " " + template + " is not documented");
            return new Verdict(null, request, errorAnswer(status, contentType, body));
        }
        String operation = method + " " + template;
        String what = operation + " → " + status;
        checkParameters(template, method, rawPath, rawQuery, what, request);
        checkRequestBody(op, pointer(template, method), requestType, requestBody, what, request);
        checkAnswer(op, pointer(template, method), status, contentType, body, what, answer);
        return new Verdict(operation, request, answer);
    }

    private void checkAnswer(JsonNode op, String ptr, int status, String contentType, byte[] body, String what,
            List<String> problems) {
        String code = String.valueOf(status);
        if (op.path("responses").path(code).isMissingNode() && op.path("responses").has("default")) {
            code = "default"; // OpenAPI: the answer for every status the operation does not list
        }
        JsonNode answer = op.path("responses").path(code);
        String answerPtr = ptr + "/responses/" + code;
        if (answer.isMissingNode()) {
            problems.add(what + ": status " + code + " is not documented (documented: " + names(op.path("responses")) + ")");
            return;
        }
        if (answer.has("$ref")) {
            answerPtr = answer.get("$ref").asText().substring(1);
            answer = doc.at(answerPtr);
        }
        JsonNode content = answer.path("content");
        if (content.isMissingNode() || content.isEmpty()) {
            if (body.length > 0) {
                problems.add(what + ": documented without a body, got " + body.length + " bytes");
            }
            return;
        }
        String type = mediaType(contentType);
        if (!content.has(type) && !content.has(ANY_TYPE)) {
            problems.add(what + ": Content-Type " + type + " is not documented (" + names(content) + ")");
        } else if (type.equals("application/json") && content.has(type)) {
            validate(answerPtr + "/content/application~1json/schema", body, what + " response", problems);
        }
    }

    /**
     * What keeps an answer from being the document's error ({@code Error}: a 4xx or 5xx with a JSON
     * body {@code {"error": "..."}}), the answer due to a request the document does not describe.
     */
    List<String> errorAnswer(int status, String contentType, byte[] body) {
        List<String> problems = new ArrayList<>();
        String what = "the error answer " + status;
        if (status < 400) {
            problems.add(what + ": not an error status, for a request the document does not describe");
        } else if (!mediaType(contentType).equals("application/json")) {
            problems.add(what + ": Content-Type " + contentType + ", not application/json");
        } else {
            validate(ERROR_SCHEMA, body, what, problems);
        }
        return problems;
    }

    private void checkParameters(String template, String method, String rawPath, String rawQuery, String what,
            List<String> problems) {
        Map<String, Param> path = new LinkedHashMap<>();
        Map<String, Param> query = new LinkedHashMap<>();
        for (Param p : parameters(pointer(template, method))) {
            (p.in().equals("path") ? path : query).putIfAbsent(p.name(), p);
        }
        String[] ts = template.split("/", -1);
        String[] segments = rawPath.split("/", -1);
        for (int i = 0; i < ts.length; i++) {
            if (ts[i].startsWith("{")) {
                String name = ts[i].substring(1, ts[i].length() - 1);
                Param p = path.get(name);
                if (p == null) {
                    problems.add(what + ": the path parameter " + name + " is not documented");
                } else {
                    checkValue(p, ts[i].equals(REST) ? String.join("/", List.of(segments).subList(i, segments.length))
                            : segments[i], what, problems);
                }
            }
        }
        Map<String, String> sent = new LinkedHashMap<>();
        if (rawQuery != null && !rawQuery.isEmpty()) {
            for (String pair : rawQuery.split("&")) {
                int eq = pair.indexOf('=');
                sent.put(eq < 0 ? pair : pair.substring(0, eq), eq < 0 ? "" : pair.substring(eq + 1));
            }
        }
        for (Map.Entry<String, String> e : sent.entrySet()) {
            if (template.endsWith(REST)) {
                break; // the query belongs to the server behind the exposed port
            }
            Param p = query.get(e.getKey());
            if (p == null) {
                problems.add(what + ": the query parameter " + e.getKey() + " is not documented");
            } else {
                checkValue(p, e.getValue(), what, problems);
            }
        }
        for (Param p : query.values()) {
            if (p.node().path("required").asBoolean() && !sent.containsKey(p.name())) {
                problems.add(what + ": required query parameter " + p.name() + " was not sent");
            }
        }
    }

    /** A parameter's value, percent-decoded, against its schema (a string). */
    private void checkValue(Param p, String raw, String what, List<String> problems) {
        String value;
        try {
            value = URLDecoder.decode(raw.replace("+", "%2B"), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            problems.add(what + ": the " + p.in() + " parameter " + p.name() + " is malformed (" + raw + ")");
            return;
        }
        try {
            validate(p.pointer() + "/schema", Api.JSON.writeValueAsBytes(value),
                    what + " " + p.in() + " parameter " + p.name(), problems);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void checkRequestBody(JsonNode op, String ptr, String requestType, byte[] requestBody, String what,
            List<String> problems) {
        JsonNode requestBodySpec = op.path("requestBody");
        // an empty file is a body; an empty JSON text is none (on the wire both are Content-Length: 0)
        boolean sent = requestBody != null
                && (requestBody.length > 0 || requestType != null && !mediaType(requestType).equals("application/json"));
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
        String type = mediaType(requestType);
        JsonNode content = requestBodySpec.path("content");
        if (!content.has(type) && !content.has(ANY_TYPE)) {
            problems.add(what + ": a request body of type " + requestType + " was sent, the operation documents " + names(content));
        } else if (type.equals("application/json") && content.has(type)) {
            validate(ptr + "/requestBody/content/application~1json/schema", requestBody, what + " request", problems);
        }
    }

    private record Param(String name, String in, JsonNode node, String pointer) {
    }

    /** The operation's parameters, then its path's ({@code $ref}s resolved), each with the JSON pointer to it. */
    private List<Param> parameters(String operationPtr) {
        List<Param> all = new ArrayList<>();
        for (String owner : List.of(operationPtr, operationPtr.substring(0, operationPtr.lastIndexOf('/')))) {
            JsonNode params = doc.at(owner + "/parameters");
            for (int i = 0; i < params.size(); i++) {
                JsonNode p = params.get(i);
                String ptr = owner + "/parameters/" + i;
                if (p.has("$ref")) {
                    ptr = p.get("$ref").asText().substring(1);
                    p = doc.at(ptr);
                }
                all.add(new Param(p.path("name").asText(), p.path("in").asText(), p, ptr));
            }
        }
        return all;
    }

    private JsonNode operation(String operation) {
        String[] mt = operation.split(" ", 2);
        return doc.at(pointer(mt[1], mt[0]));
    }

    private static String pointer(String template, String method) {
        return "/paths/" + template.replace("~", "~0").replace("/", "~1") + "/" + method.toLowerCase();
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

    /** The media range of a body that may be anything (what an exposed port's server takes and answers). */
    private static final String ANY_TYPE = "*/*";
    /** A last path parameter that takes the rest of the path, slashes and all (an exposed port's). */
    private static final String REST = "{path}";

    /** The documented path template that a concrete path (still percent-encoded) matches, literal segments first. */
    String template(String rawPath) {
        String[] segments = rawPath.split("/", -1);
        String best = null;
        for (Iterator<String> it = doc.get("paths").fieldNames(); it.hasNext(); ) {
            String t = it.next();
            String[] ts = t.split("/", -1);
            boolean rest = ts[ts.length - 1].equals(REST);
            if (rest ? segments.length < ts.length : ts.length != segments.length) {
                continue;
            }
            boolean match = true;
            for (int i = 0; i < ts.length && match; i++) {
                match = ts[i].equals(REST) || (ts[i].startsWith("{") ? !segments[i].isEmpty() : ts[i].equals(segments[i]));
            }
            if (match && (best == null || literals(t) > literals(best))) {
                best = t;
            }
        }
        return best;
    }

    private static int literals(String template) {
        int n = 0;
        for (String s : template.split("/")) {
            n += s.startsWith("{") ? 0 : 1;
        }
        return n;
    }

    private static String mediaType(String contentType) {
        return contentType == null ? "" : contentType.split(";")[0].strip();
    }

    private static String names(JsonNode object) {
        List<String> names = new ArrayList<>();
        object.fieldNames().forEachRemaining(names::add);
        return String.join(", ", names);
    }
}
