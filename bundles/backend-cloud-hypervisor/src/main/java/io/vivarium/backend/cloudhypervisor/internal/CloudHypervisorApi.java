package io.vivarium.backend.cloudhypervisor.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.vivarium.backend.cloudhypervisor.internal.CloudHypervisorTypes.RestoreConfig;
import io.vivarium.backend.cloudhypervisor.internal.CloudHypervisorTypes.VmConfig;
import io.vivarium.backend.cloudhypervisor.internal.CloudHypervisorTypes.VmSnapshotConfig;
import io.vivarium.kit.vmm.VmmApiClient;
import io.vivarium.kit.vmm.VmmApiException;
import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The API of one Cloud Hypervisor process, spoken over its Unix socket ({@code --api-socket}) as
 * the document {@link #TARGET} gives it, under {@code /api/v1}: each method is one operation of it
 * (create then boot; pause, snapshot, resume; or restore into a process with no VM). A refusal is
 * a {@link VmmApiException} with Cloud Hypervisor's text (its error bodies are not JSON).
 */
final class CloudHypervisorApi implements Closeable {
    /** The version of Cloud Hypervisor's API document these calls are written and tested against. */
    static final String TARGET = "0.3.0";

    private static final ObjectMapper JSON = new ObjectMapper();

    private final VmmApiClient http;

    /** Talks to the Cloud Hypervisor whose API socket is {@code socket}, waiting up to {@code timeout} for each answer. */
    CloudHypervisorApi(Path socket, Duration timeout) {
        this.http = new VmmApiClient("Cloud Hypervisor", socket, "/api/v1", JSON, String::strip, timeout);
    }

    /** {@code PUT vm.create}: the VM made, not booted. */
    void create(VmConfig config) throws IOException {
        http.send("PUT", "/vm.create", config);
    }

    /** {@code PUT vm.boot}. */
    void boot() throws IOException {
        http.send("PUT", "/vm.boot", null);
    }

    /** {@code PUT vm.pause}. */
    void pause() throws IOException {
        http.send("PUT", "/vm.pause", null);
    }

    /** {@code PUT vm.resume}. */
    void resume() throws IOException {
        http.send("PUT", "/vm.resume", null);
    }

    /** {@code PUT vm.snapshot} of a paused VM into directory {@code dir} (which must exist). */
    void snapshot(Path dir) throws IOException {
        http.send("PUT", "/vm.snapshot", new VmSnapshotConfig(fileUrl(dir)));
    }

    /** {@code PUT vm.restore} from directory {@code dir} a snapshot wrote, into a process with no VM yet. */
    void restore(Path dir, boolean resume) throws IOException {
        http.send("PUT", "/vm.restore", new RestoreConfig(fileUrl(dir), resume));
    }

    /** {@code PUT vm.shutdown}: the VM stops; the process stays, its VM still created. */
    void shutdown() throws IOException {
        http.send("PUT", "/vm.shutdown", null);
    }

    /** {@code PUT vm.delete}: the VM is gone from the process. */
    void delete() throws IOException {
        http.send("PUT", "/vm.delete", null);
    }

    /** {@code GET vm.info}: the VM's state ({@code Created}, {@code Running}, {@code Paused}, {@code Shutdown}). */
    String state() throws IOException {
        return http.send("GET", "/vm.info", null).path("state").asText();
    }

    /** {@code GET vmm.ping}: the Cloud Hypervisor answering. */
    String version() throws IOException {
        return http.send("GET", "/vmm.ping", null).path("version").asText();
    }

    /** {@code PUT vmm.shutdown}: the process ends. */
    void shutdownVmm() throws IOException {
        http.send("PUT", "/vmm.shutdown", null);
    }

    /** {@code file://} and the absolute path, as written (a {@link Path#toUri} ends in '/' only for a directory that exists). */
    private static String fileUrl(Path dir) {
        return "file://" + dir.toAbsolutePath();
    }

    @Override
    public void close() throws IOException {
        http.close();
    }
}
