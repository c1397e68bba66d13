package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where the command line finds its daemon and token: flags, then the environment, then the state directory. */
class DaemonTargetTest {
    @TempDir
    Path dir;

    @Test
    void flagsWinOverTheEnvironmentWhichWinsOverTheStateDirectory() throws Exception {
        Path state = Files.createDirectories(dir.resolve("var"));
        Files.writeString(state.resolve(DaemonTarget.ADDRESS), "http://127.0.0.1:9000\n");
        Files.writeString(state.resolve("tokens"), "# c\nacme-admin acme admin\nops default operator\n");

        DaemonTarget fromState = DaemonTarget.resolve(List.of("ls", "--state", state.toString()), Callers.withEnv(Map.of()), false);
        assertEquals("http://127.0.0.1:9000", fromState.url());
        assertEquals(state.resolve(DaemonTarget.ADDRESS).toString(), fromState.from());
        assertEquals("acme-admin", fromState.token(), "a sandbox command takes the first token");
        assertEquals(List.of("ls"), fromState.words());
        assertEquals("ops", DaemonTarget.resolve(List.of("--state", state.toString()), Callers.withEnv(Map.of()), true).token(),
                "administration takes the first operator token");

        DaemonTarget fromEnv = DaemonTarget.resolve(List.of(), Callers.withEnv(Map.of("VIVARIUM_URL", "http://h:1/", "VIVARIUM_TOKEN", "t",
                "VIVARIUM_STATE", state.toString())), false);
        assertEquals("http://h:1", fromEnv.url());
        assertEquals("$VIVARIUM_URL", fromEnv.from());
        assertEquals("t", fromEnv.token());

        DaemonTarget fromFlags = DaemonTarget.resolve(List.of("--url", "https://x:2", "--token", "f", "info", "sb-1"),
                Callers.withEnv(Map.of("VIVARIUM_URL", "http://h:1", "VIVARIUM_TOKEN", "t")), false);
        assertEquals("https://x:2", fromFlags.url());
        assertEquals("f", fromFlags.token());
        assertEquals(List.of("info", "sb-1"), fromFlags.words());
    }

    @Test
    void nothingToFindSaysWhatWasTried() throws Exception {
        DaemonTarget.Unresolved none = assertThrows(DaemonTarget.Unresolved.class,
                () -> DaemonTarget.resolve(List.of("--state", dir.toString()), Callers.withEnv(Map.of()), false));
        assertTrue(none.getMessage().contains("--url (not given)") && none.getMessage().contains("$VIVARIUM_URL (not set)")
                && none.getMessage().contains(dir.resolve(DaemonTarget.ADDRESS).toString()), none.getMessage());
        DaemonTarget noToken = DaemonTarget.resolve(List.of("--url", "http://h:1", "--state", dir.toString()), Callers.withEnv(Map.of()), false);
        assertNull(noToken.token());
        DaemonTarget.Unresolved why = assertThrows(DaemonTarget.Unresolved.class, noToken::requireToken);
        assertTrue(why.getMessage().contains(dir.resolve("tokens").toString()), why.getMessage());
    }
}
