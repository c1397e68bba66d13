package io.vivarium.backend.procbox.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Files of one bubblewrap launch in a private directory.
 *
 * @param pidFile gets the host pid of bwrap's outer process, to tell early that it died
 * @param infoFile gets bwrap's {@code --info-fd} JSON with the pid of the process it cloned
 * @param logFile gets the stdout and stderr of bwrap and the sandbox's init
 */
record LaunchFiles(Path pidFile, Path infoFile, Path logFile) {

    private static final ObjectMapper JSON = new ObjectMapper();

    static LaunchFiles in(Path dir) {
        return new LaunchFiles(dir.resolve("procbox.pid"), dir.resolve("procbox-info.json"),
                dir.resolve("procbox.log"));
    }

    /** The pid of bwrap's outer process, once recorded. */
    Optional<Long> bwrapPid() {
        try {
            return Optional.of(Long.parseLong(Files.readString(pidFile).trim()));
        } catch (IOException | NumberFormatException e) {
            return Optional.empty();
        }
    }

    /**
     * The pid of the process bwrap cloned; bwrap writes the JSON in pieces, and until it is complete
     * (it ends in a brace) this is empty, without parsing (a launch polls this every few ms).
     */
    Optional<Long> childPid() {
        try {
            byte[] bytes = Files.readAllBytes(infoFile);
            if (!endsWithBrace(bytes)) {
                return Optional.empty();
            }
            JsonNode info = JSON.readTree(bytes);
            JsonNode pid = info == null ? null : info.get("child-pid");
            return pid != null && pid.canConvertToLong() ? Optional.of(pid.asLong()) : Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    private static boolean endsWithBrace(byte[] bytes) {
        for (int i = bytes.length - 1; i >= 0; i--) {
            if (!Character.isWhitespace(bytes[i])) {
                return bytes[i] == '}';
            }
        }
        return false;
    }
}
