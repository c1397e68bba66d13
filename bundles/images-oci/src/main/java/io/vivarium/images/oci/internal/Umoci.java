package io.vivarium.images.oci.internal;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.vivarium.common.exec.HostCommand;

/**
 * umoci, which unpacks an image of an OCI layout into a runtime bundle ({@code rootfs/} and a
 * {@code config.json}), applying its layers' whiteouts, and resolves the image's {@code User} in
 * the image's own {@code /etc/passwd} and {@code /etc/group} as it writes the bundle's process.
 */
final class Umoci {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path umoci;

    Umoci(Path umoci) {
        this.umoci = umoci;
    }

    Path path() {
        return umoci;
    }

    /** Unpacks {@code layout}'s image tagged {@code image} into {@code bundle} (not yet there). */
    void unpack(Path layout, Path bundle, Duration timeout) throws IOException {
        HostCommand.run(List.of(umoci.toString(), "unpack", "--image", layout + ":image", bundle.toString()), timeout);
    }

    /** The uid, gid and home directory a bundle's process runs with, as umoci resolved them. */
    static Process processOf(Path bundle) throws IOException {
        JsonNode process = JSON.readTree(bundle.resolve("config.json").toFile()).path("process");
        String home = null;
        for (JsonNode e : process.path("env")) {
            if (e.asText().startsWith("HOME=")) {
                home = e.asText().substring("HOME=".length());
            }
        }
        return new Process(process.path("user").path("uid").asInt(0), process.path("user").path("gid").asInt(0), home);
    }

    /** A bundle's process: who it runs as, and its {@code HOME}. */
    record Process(int uid, int gid, String home) {
    }
}
