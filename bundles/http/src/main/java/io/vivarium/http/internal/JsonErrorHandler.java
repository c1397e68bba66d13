package io.vivarium.http.internal;

import java.nio.ByteBuffer;
import java.util.Map;

import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;

/**
 * Jetty's own error answers as {@code {"error": "..."}}: what Jetty refuses before any servlet
 * runs (a request line or headers it cannot parse, a URI too long, headers too big) and what its
 * servlet context refuses before dispatching (an ambiguous or malformed path). Installed on the
 * server and on every servlet context by {@link JsonErrorPages}.
 */
final class JsonErrorHandler extends ErrorHandler {
    private static final HttpField JSON = new HttpField(HttpHeader.CONTENT_TYPE, "application/json");

    /** What to do instead, by status. */
    private static final Map<Integer, String> HINTS = Map.of(
            400, "; paths here are plain segments: no empty segments, no percent-encoded '/', '\\', '.' or '..', "
                    + "no control characters, and well-formed %XX escapes",
            404, "; see GET /v1/openapi.json for the routes served here",
            413, "; send a smaller body",
            414, "; send a shorter URI",
            431, "; send fewer or smaller headers");

    private final JsonCodec json = new JsonCodec();

    JsonErrorHandler() {
        setShowStacks(false);
        setShowCauses(false);
    }

    /** Every method gets a body: the JSON error is as useful to a PUT or DELETE as to a GET. */
    @Override
    public boolean errorPageForMethod(String method) {
        return true;
    }

    @Override
    protected void generateResponse(Request request, Response response, int code, String message, Throwable cause,
            Callback callback) {
        byte[] body = json.error(describe(code, message));
        response.getHeaders().put(JSON);
        response.getHeaders().put(HttpHeader.CONTENT_LENGTH, body.length);
        response.write(true, ByteBuffer.wrap(body), callback);
    }

    /** The answer to a request Jetty could not even parse: there is no request to dispatch. */
    @Override
    public ByteBuffer badMessageError(int status, String reason, HttpFields.Mutable fields) {
        fields.put(JSON);
        return ByteBuffer.wrap(json.error(describe(status, reason)));
    }

    /**
     * Jetty's reason ("Ambiguous URI path separator", "Illegal character SPACE") and what the
     * caller should do instead. Not the request's path: for a URI Jetty could not parse it holds a
     * placeholder such as {@code /badURI}; and not the cause, which repeats the reason.
     */
    static String describe(int code, String reason) {
        String what = reason == null || reason.isBlank() ? HttpStatus.getMessage(code) : reason;
        return "request refused: " + what + HINTS.getOrDefault(code, "");
    }
}
