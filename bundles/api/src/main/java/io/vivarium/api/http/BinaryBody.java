package io.vivarium.api.http;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Objects;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * A response that is not JSON, such as a file's bytes: a {@link RouteHandler} returns one and the
 * http bundle writes it as is, with the route's status. Anything that can fail must fail before the
 * handler returns; once {@link #writeTo} runs, the status is sent. Since 1.2.
 */
@ConsumerType
public interface BinaryBody {

    /** The {@code Content-Type}, e.g. {@code application/octet-stream}. */
    String contentType();

    /** The number of bytes {@link #writeTo} writes, or -1 if not known in advance. */
    long length();

    void writeTo(OutputStream out) throws IOException;

    /**
     * The status to send, given the route's: the route's by default; a stream that reports an
     * operation as it goes (whose outcome comes at its end) answers 200 on a route whose plain
     * answer is 201. Since 1.8.
     */
    default int status(int routeStatus) {
        return routeStatus;
    }

    /** Bytes held in memory. */
    static BinaryBody of(String contentType, byte[] bytes) {
        Objects.requireNonNull(contentType, "contentType");
        Objects.requireNonNull(bytes, "bytes");
        return new BinaryBody() {
            @Override
            public String contentType() {
                return contentType;
            }

            @Override
            public long length() {
                return bytes.length;
            }

            @Override
            public void writeTo(OutputStream out) throws IOException {
                out.write(bytes);
            }
        };
    }
}
