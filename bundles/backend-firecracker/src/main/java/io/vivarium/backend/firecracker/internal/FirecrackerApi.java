package io.vivarium.backend.firecracker.internal;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.BootSource;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.Drive;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.InstanceInfo;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.MachineConfig;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.SnapshotCreate;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.SnapshotLoad;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.Vsock;
import java.io.Closeable;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.regex.Pattern;
import org.apache.hc.client5.http.classic.methods.HttpUriRequestBase;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.io.entity.StringEntity;
import org.apache.hc.core5.util.Timeout;

/**
 * The API of one Firecracker process, spoken over its Unix socket ({@code --api-sock}) as the
 * document {@link #TARGET} gives it: each method is one operation of it, in the order a
 * microVM's life needs them (configure, start; pause, snapshot, resume; or load into a fresh
 * process). Firecracker answers 204 to what it did and 400 with a {@code fault_message} to what it
 * refused, which {@link FirecrackerApiException} carries.
 */
final class FirecrackerApi implements Closeable {
    /** The version of Firecracker's API document these calls are written and tested against. */
    static final String TARGET = "1.17.0-dev";

    /** What Firecracker takes as a drive's id in its path: it names the drive, and is never a path itself. */
    private static final Pattern DRIVE_ID = Pattern.compile("[A-Za-z0-9_]{1,64}");
    private static final ObjectMapper JSON = new ObjectMapper()
            .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    private final Path socket;
    private final CloseableHttpClient http;

    /** Talks to the Firecracker whose API socket is {@code socket}, waiting up to {@code timeout} for each answer. */
    FirecrackerApi(Path socket, Duration timeout) {
        this.socket = socket;
        Timeout t = Timeout.of(timeout);
        this.http = HttpClients.custom()
                .setDefaultRequestConfig(RequestConfig.custom().setUnixDomainSocket(socket).setConnectionRequestTimeout(t)
                        .setResponseTimeout(t).build())
                .disableAutomaticRetries()
                .disableRedirectHandling()
                .build();
    }

    /** {@code PUT /machine-config}. Pre-boot only. */
    void configureMachine(MachineConfig config) throws IOException {
        send("PUT", "/machine-config", config);
    }

    /** {@code PUT /boot-source}. Pre-boot only. */
    void setBootSource(BootSource source) throws IOException {
        send("PUT", "/boot-source", source);
    }

    /** {@code PUT /drives/{drive_id}}. Pre-boot only. */
    void putDrive(Drive drive) throws IOException {
        if (!DRIVE_ID.matcher(drive.driveId()).matches()) {
            throw new IllegalArgumentException("a drive id is 1-64 letters, digits or '_': " + drive.driveId());
        }
        send("PUT", "/drives/" + drive.driveId(), drive);
    }

    /** {@code PUT /vsock}. Pre-boot only. */
    void putVsock(Vsock vsock) throws IOException {
        send("PUT", "/vsock", vsock);
    }

    /** Boots the microVM configured: {@code PUT /actions {"action_type": "InstanceStart"}}. */
    void start() throws IOException {
        send("PUT", "/actions", Map.of("action_type", "InstanceStart"));
    }

    /** Asks the guest to shut down (an x86 guest's keyboard controller reset): {@code SendCtrlAltDel}. */
    void sendCtrlAltDel() throws IOException {
        send("PUT", "/actions", Map.of("action_type", "SendCtrlAltDel"));
    }

    /** {@code PATCH /vm {"state": "Paused"}}: what a snapshot needs first. */
    void pause() throws IOException {
        send("PATCH", "/vm", Map.of("state", "Paused"));
    }

    /** {@code PATCH /vm {"state": "Resumed"}}. */
    void resume() throws IOException {
        send("PATCH", "/vm", Map.of("state", "Resumed"));
    }

    /** {@code PUT /snapshot/create}, of a paused microVM. */
    void createSnapshot(SnapshotCreate snapshot) throws IOException {
        send("PUT", "/snapshot/create", snapshot);
    }

    /** {@code PUT /snapshot/load}, into a fresh process (nothing configured in it yet). */
    void loadSnapshot(SnapshotLoad snapshot) throws IOException {
        send("PUT", "/snapshot/load", snapshot);
    }

    /** {@code GET /}: the instance's state. */
    InstanceInfo describe() throws IOException {
        return JSON.treeToValue(send("GET", "/", null), InstanceInfo.class);
    }

    /** {@code GET /version}: the Firecracker answering. */
    String version() throws IOException {
        return send("GET", "/version", null).path("firecracker_version").asText();
    }

    /** Sends one request; its answer's body (an empty node for a 204), or the refusal as an exception. */
    private JsonNode send(String method, String path, Object body) throws IOException {
        HttpUriRequestBase request = new HttpUriRequestBase(method, java.net.URI.create("http://localhost" + path));
        request.setHeader("Accept", "application/json");
        if (body != null) {
            request.setEntity(new StringEntity(JSON.writeValueAsString(body), ContentType.APPLICATION_JSON));
        }
        String what = method + " " + path;
        try {
            return http.execute(request, response -> {
                String text = response.getEntity() == null ? ""
                        : EntityUtils.toString(response.getEntity(), StandardCharsets.UTF_8);
                JsonNode answer = text.isBlank() ? JSON.createObjectNode() : JSON.readTree(text);
                if (response.getCode() / 100 != 2) {
                    throw new FirecrackerApiException(what, response.getCode(),
                            answer.path("fault_message").asText(text.isBlank() ? "(no message)" : text));
                }
                return answer;
            });
        } catch (FirecrackerApiException e) {
            throw e;
        } catch (IOException e) {
            throw new IOException("cannot reach Firecracker's API at " + socket + " (" + what + "): " + e.getMessage(), e);
        }
    }

    @Override
    public void close() throws IOException {
        http.close();
    }
}
