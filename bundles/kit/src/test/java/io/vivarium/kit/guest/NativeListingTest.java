package io.vivarium.kit.guest;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;

import io.vivarium.testkit.fingerprint.HostileTree;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Our agent's {@code vivarium-list} over the fingerprint modes' hostile tree (names with quotes,
 * newlines, tabs, leading dashes; links, a fifo, an mtime before 1970): every regular file, with
 * the fingerprint the host computes for it, as the modes' listing scripts give them.
 */
class NativeListingTest {
    @TempDir
    Path tmp;
    PeerProcess agent;
    GuestAgentClient client;

    @BeforeEach
    void start() throws Exception {
        agent = VivariumAgent.start();
        client = GuestAgentClient.unixSocket(agent.socket());
    }

    @AfterEach
    void stop() throws Exception {
        client.close();
        agent.close();
    }

    @ParameterizedTest
    @ValueSource(strings = {"sha256", "stat"})
    void listsEveryRegularFileWithTheHostsFingerprint(String mode) throws Exception {
        HostileTree tree = HostileTree.create(tmp);

        GuestExecResult r = client.list(mode, tree.dirs(), Duration.ofSeconds(20), 1 << 20,
                Deadline.after(Duration.ofSeconds(30))).orElseThrow();

        assertEquals(0, r.exitCode(), new String(r.stderr()));
        Map<String, String> expected = new TreeMap<>();
        for (String file : tree.files()) {
            Path p = Path.of(file);
            expected.put(file, mode.equals("sha256")
                    ? HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p)))
                    : Files.size(p) + ":" + Files.getLastModifiedTime(p).toInstant().getEpochSecond());
        }
        Map<String, String> listed = new TreeMap<>();
        String out = new String(r.stdout(), StandardCharsets.UTF_8);
        for (String record : out.split("\0")) {
            int tab = record.indexOf('\t');
            listed.put(record.substring(tab + 1), record.substring(0, tab));
        }
        assertEquals(expected, listed);
    }
}
