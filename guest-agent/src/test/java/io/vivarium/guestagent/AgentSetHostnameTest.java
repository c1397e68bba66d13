package io.vivarium.guestagent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code --set-hostname}, which procbox starts in a pooled sandbox's UTS namespace: it sets the one
 * line it reads, refuses anything that is not a hostname, and changes nothing without a line.
 * Each run is in a UTS namespace of its own ({@code unshare -u}), where a shell then prints the
 * hostname it was left with.
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class AgentSetHostnameTest {
    private static final Path UNSHARE = Path.of("/usr/bin/unshare");

    /** Output and exit status of the agent given {@code input}, then {@code hostname}'s output in the same namespace. */
    private record Ran(int status, String output) {}

    private static Ran run(String input) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(UNSHARE.toString(), "--uts", "/bin/sh", "-c",
                "hostname before; \"$0\" --set-hostname; s=$?; echo \"status $s\"; hostname", AgentProcess.binary().toString())
                .redirectErrorStream(true).start();
        try (OutputStream in = p.getOutputStream()) {
            in.write(input.getBytes(StandardCharsets.UTF_8));
        }
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), "the agent did not exit");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String[] lines = out.strip().split("\n");
        String statusLine = lines[lines.length - 2];
        assertTrue(statusLine.startsWith("status "), out);
        return new Ran(Integer.parseInt(statusLine.substring(7)), out);
    }

    private static String hostnameAfter(Ran ran) {
        String[] lines = ran.output().strip().split("\n");
        return lines[lines.length - 1];
    }

    @Test
    void setsTheLineItReadsAndRefusesWhatIsNoHostname() throws Exception {
        assumeTrue(AgentExecTest.isRoot(), "needs root to create a UTS namespace");
        assumeTrue(Files.isExecutable(UNSHARE), "needs unshare (util-linux)");

        Ran set = run("sb-0123456789ab\nignored\n");
        assertEquals(0, set.status(), set.output());
        assertEquals("sb-0123456789ab", hostnameAfter(set), "only the first line is the name");

        for (String bad : new String[] {"Upper\n", "-leading\n", "a b\n", "x".repeat(64) + "\n", "\n", "no-newline", ""}) {
            Ran refused = run(bad);
            assertEquals(2, refused.status(), "refused: " + bad + " -> " + refused.output());
            assertEquals("before", hostnameAfter(refused), "a refused name changes nothing: " + refused.output());
        }
    }
}
