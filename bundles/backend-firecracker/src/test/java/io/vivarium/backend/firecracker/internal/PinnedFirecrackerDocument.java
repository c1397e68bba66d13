package io.vivarium.backend.firecracker.internal;

import com.atlassian.oai.validator.OpenApiInteractionValidator;
import com.atlassian.oai.validator.model.Request;
import com.atlassian.oai.validator.model.SimpleRequest;
import com.atlassian.oai.validator.report.LevelResolver;
import com.atlassian.oai.validator.report.ValidationReport;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.stream.Collectors;

/**
 * Firecracker's published API document of the version {@link FirecrackerApi} targets, copied
 * into the tests unchanged, as a validator of requests. A field the document does not define is
 * an error, as Firecracker itself refuses one: that is what makes a field renamed between
 * versions fail.
 */
final class PinnedFirecrackerDocument {
    static final String RESOURCE = "/firecracker/firecracker-" + FirecrackerApi.TARGET + ".yaml";

    private static final OpenApiInteractionValidator VALIDATOR = OpenApiInteractionValidator
            .createForInlineApiSpecification(text())
            .withLevelResolver(LevelResolver.create()
                    .withLevel("validation.schema.additionalProperties", ValidationReport.Level.ERROR)
                    .build())
            .build();

    private PinnedFirecrackerDocument() {
    }

    static String text() {
        try (InputStream in = PinnedFirecrackerDocument.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("no " + RESOURCE + " on the test class path");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** What is wrong with request {@code method path body} by the document; empty when nothing is. */
    static String violations(String method, String path, String body) {
        SimpleRequest.Builder request = new SimpleRequest.Builder(Request.Method.valueOf(method), path);
        if (body != null && !body.isEmpty()) {
            request.withBody(body).withContentType("application/json");
        }
        ValidationReport report = VALIDATOR.validateRequest(request.build());
        return report.getMessages().stream()
                .filter(m -> m.getLevel() == ValidationReport.Level.ERROR)
                .map(m -> m.getKey() + ": " + m.getMessage())
                .collect(Collectors.joining("; "));
    }
}
