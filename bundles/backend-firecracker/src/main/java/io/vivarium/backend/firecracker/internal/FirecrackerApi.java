package io.vivarium.backend.firecracker.internal;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.BootSource;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.Drive;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.InstanceInfo;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.MachineConfig;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.SnapshotCreate;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.SnapshotLoad;
import io.vivarium.backend.firecracker.internal.FirecrackerTypes.Vsock;
import io.vivarium.kit.vmm.VmmApiClient;
import io.vivarium.kit.vmm.VmmApiException;
import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The API of one Firecracker process, spoken over its Unix socket ({@code --api-sock}) as the
 * document {@link #TARGET} gives it: each method is one operation of it, in the order a
 * microVM's life needs them (configure, start; pause, snapshot, resume; or load into a fresh
 * process). Firecracker answers 204 to what it did and 400 with a {@code fault_message} to what it
 * refused: a {@link VmmApiException} with that message.
 */
final class FirecrackerApi implements Closeable {
    /** The version of Firecracker's API document these calls are written and tested against. */
    static final String TARGET = "1.17.0-dev";

    /** What Firecracker takes as a drive's id in its path: it names the drive, and is never a path itself. */
    private static final Pattern DRIVE_ID = Pattern.compile("[A-Za-z0-9_]{1,64}");
    private static final ObjectMapper JSON = new ObjectMapper()
            .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    private final VmmApiClient http;

    /** Talks to the Firecracker whose API socket is {@code socket}, waiting up to {@code timeout} for each answer. */
    FirecrackerApi(Path socket, Duration timeout) {
        this.http = new VmmApiClient("Firecracker", socket, "", JSON, FirecrackerApi::faultMessage, timeout);
    }

    /** {@code PUT /machine-config}. Pre-boot only. */
    void configureMachine(MachineConfig config) throws IOException {
        http.send("PUT", "/machine-config", config);
    }

    /** {@code PUT /boot-source}. Pre-boot only. */
    void setBootSource(BootSource source) throws IOException {
        http.send("PUT", "/boot-source", source);
    }

    /** {@code PUT /drives/{drive_id}}. Pre-boot only. */
    void putDrive(Drive drive) throws IOException {
        if (!DRIVE_ID.matcher(drive.driveId()).matches()) {
            throw new IllegalArgumentException("a drive id is 1-64 letters, digits or '_': " + drive.driveId());
        }
        http.send("PUT", "/drives/" + drive.driveId(), drive);
    }

    /** {@code PUT /vsock}. Pre-boot only. */
    void putVsock(Vsock vsock) throws IOException {
        http.send("PUT", "/vsock", vsock);
    }

    /** Boots the microVM configured: {@code PUT /actions {"action_type": "InstanceStart"}}. */
    void start() throws IOException {
        http.send("PUT", "/actions", Map.of("action_type", "InstanceStart"));
    }

    /** Asks the guest to shut down (an x86 guest's keyboard controller reset): {@code SendCtrlAltDel}. */
    void sendCtrlAltDel() throws IOException {
        http.send("PUT", "/actions", Map.of("action_type", "SendCtrlAltDel"));
    }

    /** {@code PATCH /vm {"state": "Paused"}}: what a snapshot needs first. */
    void pause() throws IOException {
        http.send("PATCH", "/vm", Map.of("state", "Paused"));
    }

    /** {@code PATCH /vm {"state": "Resumed"}}. */
    void resume() throws IOException {
        http.send("PATCH", "/vm", Map.of("state", "Resumed"));
    }

    /** {@code PUT /snapshot/create}, of a paused microVM. */
    void createSnapshot(SnapshotCreate snapshot) throws IOException {
        http.send("PUT", "/snapshot/create", snapshot);
    }

    /** {@code PUT /snapshot/load}, into a fresh process (nothing configured in it yet). */
    void loadSnapshot(SnapshotLoad snapshot) throws IOException {
        http.send("PUT", "/snapshot/load", snapshot);
    }

    /** {@code GET /}: the instance's state. */
    InstanceInfo describe() throws IOException {
        return JSON.treeToValue(http.send("GET", "/", null), InstanceInfo.class);
    }

    /** {@code GET /version}: the Firecracker answering. */
    String version() throws IOException {
        return http.send("GET", "/version", null).path("firecracker_version").asText();
    }

    /** What Firecracker said in refusing: the {@code fault_message} of its body, or the body as it came. */
    private static String faultMessage(String body) {
        try {
            return JSON.readTree(body).path("fault_message").asText(body);
        } catch (IOException e) {
            return body;
        }
    }

    @Override
    public void close() throws IOException {
        http.close();
    }
}
