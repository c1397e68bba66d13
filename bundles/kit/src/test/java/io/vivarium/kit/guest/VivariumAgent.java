package io.vivarium.kit.guest;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;

/** Our agent, the binary the guest-agent module ships as a classpath resource, started on the host. */
final class VivariumAgent {
    private static final String RESOURCE = "/io/vivarium/guestagent/vivarium-agent";

    private VivariumAgent() {
    }

    static PeerProcess start() throws IOException {
        Path home = Files.createTempDirectory("vivarium-agent-test");
        Path binary = home.resolve("vivarium-agent");
        try (InputStream in = VivariumAgent.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(RESOURCE + " is not on the test classpath: build the guest-agent module");
            }
            Files.copy(in, binary);
        }
        Files.setPosixFilePermissions(binary, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path socket = home.resolve("agent.sock");
        return PeerProcess.start("vivarium-agent", home, socket, List.of(binary.toString(), "--listen", "unix:" + socket));
    }
}
