package io.vivarium.testkit.vmm;

import com.atlassian.oai.validator.OpenApiInteractionValidator;
import com.atlassian.oai.validator.model.Request;
import com.atlassian.oai.validator.model.SimpleRequest;
import com.atlassian.oai.validator.report.LevelResolver;
import com.atlassian.oai.validator.report.ValidationReport;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * A VMM's published API document (Swagger 2.0 or OpenAPI 3), pinned as a test resource, as a
 * validator of requests. A field the document does not define is an error, as the VMMs refuse one
 * (their parsers deny unknown fields): that is what makes a field renamed between versions fail.
 */
public final class ApiDocument {
    private final String text;
    private final OpenApiInteractionValidator validator;

    private ApiDocument(String text) {
        this.text = text;
        this.validator = OpenApiInteractionValidator.createForInlineApiSpecification(text)
                .withLevelResolver(LevelResolver.create()
                        .withLevel("validation.schema.additionalProperties", ValidationReport.Level.ERROR)
                        .build())
                .build();
    }

    /** The document at class path resource {@code resource} of {@code owner}'s loader. */
    public static ApiDocument of(Class<?> owner, String resource) {
        try (InputStream in = owner.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("no " + resource + " on the test class path");
            }
            return new ApiDocument(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The document as pinned. */
    public String text() {
        return text;
    }

    /** The document's {@code info.version}, as written. */
    public String version() {
        Matcher m = Pattern.compile("(?m)^info:\\n(?:  .*\\n)*?  version: *\"?([^\"\\n]+)")
                .matcher(text);
        if (!m.find()) {
            throw new IllegalStateException("the document names no info.version");
        }
        return m.group(1).strip();
    }

    /**
     * What is wrong with request {@code method path body} by the document ({@code path} as the VMM
     * receives it, with the document's server path if it has one); empty when nothing is.
     */
    public String violations(String method, String path, String body) {
        SimpleRequest.Builder request = new SimpleRequest.Builder(Request.Method.valueOf(method), path);
        if (body != null && !body.isEmpty()) {
            request.withBody(body).withContentType("application/json");
        }
        ValidationReport report = validator.validateRequest(request.build());
        return report.getMessages().stream()
                .filter(m -> m.getLevel() == ValidationReport.Level.ERROR)
                .map(m -> m.getKey() + ": " + m.getMessage())
                .collect(Collectors.joining("; "));
    }
}
