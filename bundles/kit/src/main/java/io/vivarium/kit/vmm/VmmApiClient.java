package io.vivarium.kit.vmm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.Closeable;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.Function;
import org.apache.hc.client5.http.classic.methods.HttpUriRequestBase;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.io.entity.StringEntity;
import org.apache.hc.core5.util.Timeout;

/**
 * A VMM's HTTP API on its Unix socket: JSON in, JSON out, one request at a time, no retries and
 * no redirects (a VMM's configuration calls are not all idempotent). A status other than 2xx is a
 * {@link VmmApiException} in the VMM's own words; a VMM that cannot be reached is an
 * {@link IOException} naming the socket.
 */
public final class VmmApiClient implements Closeable {
    private final String vmm;
    private final Path socket;
    private final String base;
    private final ObjectMapper json;
    private final Function<String, String> reasonOf;
    private final CloseableHttpClient http;

    /**
     * @param vmm the VMM's name, for messages ({@code Firecracker})
     * @param socket its API socket
     * @param base the path every request's is relative to ({@code ""}, {@code "/api/v1"})
     * @param json how bodies are written and read
     * @param reasonOf what the VMM said, from the body of a refusal
     * @param timeout how long an answer is waited for
     */
    public VmmApiClient(String vmm, Path socket, String base, ObjectMapper json, Function<String, String> reasonOf,
            Duration timeout) {
        this.vmm = vmm;
        this.socket = socket;
        this.base = base;
        this.json = json;
        this.reasonOf = reasonOf;
        Timeout t = Timeout.of(timeout);
        this.http = HttpClients.custom()
                .setDefaultRequestConfig(RequestConfig.custom().setUnixDomainSocket(socket).setConnectionRequestTimeout(t)
                        .setResponseTimeout(t).build())
                .disableAutomaticRetries()
                .disableRedirectHandling()
                .build();
    }

    /**
     * Sends {@code method path} with {@code body} (none when null) written as JSON; the answer's
     * body, an empty object when it had none (a 204).
     */
    public JsonNode send(String method, String path, Object body) throws IOException {
        HttpUriRequestBase request = new HttpUriRequestBase(method, URI.create("http://localhost" + base + path));
        request.setHeader("Accept", "application/json");
        if (body != null) {
            request.setEntity(new StringEntity(json.writeValueAsString(body), ContentType.APPLICATION_JSON));
        }
        String what = method + " " + base + path;
        try {
            return http.execute(request, response -> {
                String text = response.getEntity() == null ? ""
                        : EntityUtils.toString(response.getEntity(), StandardCharsets.UTF_8);
                if (response.getCode() / 100 != 2) {
                    throw new VmmApiException(vmm, what, response.getCode(),
                            text.isBlank() ? "(it said nothing)" : reasonOf.apply(text));
                }
                return text.isBlank() ? json.createObjectNode() : json.readTree(text);
            });
        } catch (VmmApiException e) {
            throw e;
        } catch (IOException e) {
            throw new IOException("cannot reach " + vmm + "'s API at " + socket + " (" + what + "): " + e.getMessage(), e);
        }
    }

    @Override
    public void close() throws IOException {
        http.close();
    }
}
