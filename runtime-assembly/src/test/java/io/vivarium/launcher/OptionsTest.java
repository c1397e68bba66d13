package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class OptionsTest {

    private static final Path CWD = Path.of("/work/here");

    @Test
    void defaults() throws Exception {
        Options o = Options.parse(List.of(), CWD);
        assertEquals(Path.of("/work/here/var"), o.state());
        assertEquals(8889, o.port());
        assertEquals("127.0.0.1", o.host());
        assertNull(o.tokenFile());
        assertNull(o.features(), "without --features Main runs the saved set or the defaults");
        assertNull(o.deploy(), "the distribution's deploy/ is chosen by Main");
        assertEquals("procbox", o.clientBackends(), "clients may name the embedded default's backend");
    }

    @Test
    void clientBackendsAreAllOrNames() throws Exception {
        assertEquals("all", Options.parse(List.of("--client-backends", "all"), CWD).clientBackends());
        assertEquals("procbox,qemu", Options.parse(List.of("--client-backends=procbox,qemu"), CWD).clientBackends());
        for (String bad : List.of("", "procbox,", "Procbox", "a b", "procbox;rm")) {
            Options.UsageException e = assertThrows(Options.UsageException.class,
                    () -> Options.parse(List.of("--client-backends", bad), CWD), bad);
            assertTrue(e.getMessage().startsWith("--client-backends"), e.getMessage());
        }
    }

    @Test
    void allOptionsBothSpellings() throws Exception {
        Options o = Options.parse(List.of("--state", "s/../st", "--port=18889", "--host", "0.0.0.0",
                "--token-file=/etc/tok", "--features", "core, api-v1,core", "--deploy", "plugins/../dropins"), CWD);
        assertEquals(Path.of("/work/here/st"), o.state());
        assertEquals(18889, o.port());
        assertEquals("0.0.0.0", o.host());
        assertEquals(Path.of("/etc/tok"), o.tokenFile());
        assertEquals(List.of("core", "api-v1"), o.features());
        assertEquals(Path.of("/work/here/dropins"), o.deploy());
        assertEquals(Path.of("/d"), Options.parse(List.of("--deploy=/d"), CWD).deploy());
        assertEquals(Path.of("/abs"), Options.parse(List.of("--state", "/abs"), CWD).state());
    }

    @Test
    void badArguments() {
        for (List<String> bad : List.of(List.of("--port"), List.of("--port", "x"), List.of("--port", "0"),
                List.of("--port", "65536"), List.of("--bogus"), List.of("extra"), List.of("--features", ""),
                List.of("--features", "core,,procbox"), List.of("--features", "../x"), List.of("--state", ""),
                List.of("--host", ""), List.of("--port", "1", "--port", "2"), List.of("--deploy"),
                List.of("--deploy", ""), List.of("--deploy", "a", "--deploy=b"))) {
            assertThrows(Options.UsageException.class, () -> Options.parse(bad, CWD), bad.toString());
        }
    }

    @Test
    void httpsTakesCertificateAndKeyTogetherAndServesOnlyHttps() throws Exception {
        Options o = Options.parse(List.of("--tls-cert", "tls/cert.pem", "--tls-key=/etc/key.pem", "--port", "8443"), CWD);
        assertTrue(o.tls());
        assertEquals(Path.of("/work/here/tls/cert.pem"), o.tlsCert());
        assertEquals(Path.of("/etc/key.pem"), o.tlsKey());
        assertFalse(Options.parse(List.of(), CWD).tls());
        for (List<String> half : List.of(List.of("--tls-cert", "c.pem"), List.of("--tls-key", "k.pem"))) {
            String message = assertThrows(Options.UsageException.class, () -> Options.parse(half, CWD)).getMessage();
            assertTrue(message.contains("HTTPS takes both --tls-cert (the certificate) and --tls-key (its private key)"), message);
        }
        assertThrows(Options.UsageException.class, () -> Options.parse(List.of("--tls-cert", "a", "--tls-cert", "b", "--tls-key", "k"), CWD));

        Map<String, Object> c = FrameworkStarter.config(o, CWD, o.state(), CWD, o.state().resolve("tokens"), 2);
        FrameworkStarter.serveHttps(c, o.port(), Path.of("/s/tls/keystore.p12"), "pw");
        assertEquals("false", c.get("org.apache.felix.http.enable"), "no plain HTTP port at all");
        assertFalse(c.containsKey("org.osgi.service.http.port"));
        assertEquals("true", c.get("org.apache.felix.https.enable"));
        assertEquals("8443", c.get("org.osgi.service.http.port.secure"));
        assertEquals("127.0.0.1", c.get("org.apache.felix.http.host"));
        assertEquals("/s/tls/keystore.p12", c.get("org.apache.felix.https.keystore"));
        assertEquals("PKCS12", c.get("org.apache.felix.https.keystore.type"));
        assertEquals("pw", c.get("org.apache.felix.https.keystore.password"));
        assertEquals("pw", c.get("org.apache.felix.https.keystore.key.password"));
    }

    @Test
    void fileInstallWatchesTheDeployFolderAndIgnoresHiddenFiles() throws Exception {
        Options o = Options.parse(List.of("--deploy", "/srv/plugins"), CWD);
        Map<String, Object> c = FrameworkStarter.config(o, CWD, o.state(), o.deploy(), o.state().resolve("tokens"), 2);
        assertEquals("/srv/plugins", c.get("felix.fileinstall.dir"));
        assertEquals(o.state().resolve("felix-cache/fileinstall").toString(), c.get("felix.fileinstall.tmpdir"),
                "its scratch directory in the framework's storage, emptied at each start");
        Pattern filter = Pattern.compile((String) c.get("felix.fileinstall.filter"));
        for (String seen : List.of("example-backend.jar", "io.vivarium.core.cfg", "x.config")) {
            assertTrue(filter.matcher(seen).matches(), seen);
        }
        for (String hidden : List.of(".example-backend.jar.tmp", ".x.jar")) {
            assertFalse(filter.matcher(hidden).matches(), hidden);
        }
        assertEquals("false", c.get("felix.fileinstall.noInitialDelay"),
                "the first scan waits for the started framework, whose plugins bundle takes feature-bundle jars");
    }

    @Test
    void theGogoShellReadsTheTerminalOnlyWithConsole() throws Exception {
        Options plain = Options.parse(List.of(), CWD);
        Options console = Options.parse(List.of("--console"), CWD);
        assertFalse(plain.console());
        assertTrue(console.console());
        assertEquals("--nointeractive", FrameworkStarter.config(plain, CWD, plain.state(), CWD, plain.state(), 2).get("gosh.args"));
        assertEquals("", FrameworkStarter.config(console, CWD, console.state(), CWD, console.state(), 2).get("gosh.args"));
        assertThrows(Options.UsageException.class, () -> Options.parse(List.of("--console=yes"), CWD));
    }

    @Test
    void aNodeListensOnAnAddressWithPort80ByDefaultAndIsNamedByTheHostName() throws Exception {
        Options plain = Options.parse(List.of(), CWD, () -> "ignored");
        assertFalse(plain.node());
        assertNull(plain.nodeId(), "only a node has an id");

        Options node = Options.parse(List.of("--node"), CWD, () -> "f3");
        assertTrue(node.node());
        assertEquals("f3", node.nodeId(), "the host name by default");
        assertEquals(Options.DEFAULT_HOST, node.host(), "without --listen, --host/--port as ever");
        assertEquals(Options.DEFAULT_PORT, node.port());
        assertFalse(node.tls(), "a node's certificate is its own, not --tls-cert");

        Options listen = Options.parse(List.of("--node", "--listen", "0.0.0.0:80", "--node-id", "rack-2.f3_b"), CWD, () -> "h");
        assertEquals("0.0.0.0", listen.host());
        assertEquals(80, listen.port());
        assertEquals("rack-2.f3_b", listen.nodeId());

        Options hostOnly = Options.parse(List.of("--node", "--listen=10.2.4.17"), CWD, () -> "h");
        assertEquals("10.2.4.17", hostOnly.host());
        assertEquals(80, hostOnly.port(), "HOST alone is port 80, as the master assumes");

        Options v6 = Options.parse(List.of("--listen", "[::]:8443", "--node"), CWD, () -> "h");
        assertEquals("::", v6.host(), "kept bare: urlHost brackets it again");
        assertEquals(8443, v6.port());
        assertEquals("[fe80::1%eth0]", Options.urlHost(Options.parse(List.of("--node", "--listen", "[fe80::1%eth0]"), CWD, () -> "h").host()));
        assertEquals(80, Options.parse(List.of("--node", "--listen", "[::1]"), CWD, () -> "h").port());
        assertEquals("node.example.test", Options.parse(List.of("--node", "--listen", "node.example.test:9000"), CWD, () -> "h").host());

        Options hostPort = Options.parse(List.of("--node", "--port", "9000", "--host", "::1"), CWD, () -> "h");
        assertEquals("::1", hostPort.host(), "a node may take --host/--port instead of --listen");
        assertEquals(9000, hostPort.port());
    }

    @Test
    void theDefaultNodeIdIsTheHostNameOrItsFirstLabel() throws Exception {
        assertEquals("box.example.test", Options.defaultNodeId("box.example.test\n"));
        String longName = "b".repeat(40) + "." + "c".repeat(40);
        assertEquals("b".repeat(40), Options.defaultNodeId(longName), "a name over 63 characters: its first label");
        for (String unusable : new String[] { null, "", "-dash", "x".repeat(64), "a b" }) {
            String message = assertThrows(Options.UsageException.class, () -> Options.defaultNodeId(unusable)).getMessage();
            assertTrue(message.contains("give one with --node-id"), message);
        }
        String message = assertThrows(Options.UsageException.class, () -> Options.parse(List.of("--node"), CWD, () -> null)).getMessage();
        assertTrue(message.contains("host name is unknown"), message);
    }

    @Test
    void nodeOptionsThatContradictEachOtherAreUsageErrors() {
        Map<List<String>, String> bad = new java.util.LinkedHashMap<>();
        bad.put(List.of("--listen", "0.0.0.0:80"), "--listen is an option of a node: add --node");
        bad.put(List.of("--node-id", "f3"), "--node-id is an option of a node: add --node");
        bad.put(List.of("--node", "--listen", "0.0.0.0:80", "--port", "81"), "give either --listen or --host/--port, not both");
        bad.put(List.of("--node", "--host", "::", "--listen", "0.0.0.0"), "give either --listen or --host/--port, not both");
        bad.put(List.of("--node", "--tls-cert", "c.pem", "--tls-key", "k.pem"), "--node serves its own certificate");
        bad.put(List.of("--node", "--listen", "::1"), "--listen: bad address '::1'");
        bad.put(List.of("--node", "--listen", ":80"), "--listen: bad address");
        bad.put(List.of("--node", "--listen", "h:"), "--listen: bad address");
        bad.put(List.of("--node", "--listen", "h:x"), "--listen: bad address");
        bad.put(List.of("--node", "--listen", "[::1]:"), "--listen: bad address");
        bad.put(List.of("--node", "--listen", "[nothex]:80"), "--listen: bad address");
        bad.put(List.of("--node", "--listen", "h:0"), "is not between 1 and 65535");
        bad.put(List.of("--node", "--listen", "h:65536"), "is not between 1 and 65535");
        bad.put(List.of("--node", "--listen", "h:99999999999"), "is not between 1 and 65535");
        bad.put(List.of("--node", "--listen", "a", "--listen", "b"), "--listen given twice");
        bad.put(List.of("--node", "--node-id", "-f3"), "--node-id: bad id '-f3'");
        bad.put(List.of("--node", "--node-id", "a/b"), "--node-id: bad id");
        bad.put(List.of("--node", "--node-id", "x".repeat(64)), "--node-id: bad id");
        bad.put(List.of("--node", "--node-id"), "--node-id needs a value");
        bad.put(List.of("--node=yes"), "unknown argument '--node=yes'");
        bad.forEach((args, expected) -> {
            String message = assertThrows(Options.UsageException.class, () -> Options.parse(args, CWD, () -> "h"), args.toString())
                    .getMessage();
            assertTrue(message.contains(expected), args + ": " + message);
        });
        assertEquals("x".repeat(63), assertDoesNotThrowParse(List.of("--node", "--node-id", "x".repeat(63))).nodeId());
    }

    private static Options assertDoesNotThrowParse(List<String> args) {
        try {
            return Options.parse(args, CWD, () -> "h");
        } catch (Options.UsageException e) {
            throw new AssertionError(args + ": " + e.getMessage(), e);
        }
    }

    @Test
    void aNodeInPullModeDialsItsMasterAndCallsItsOwnListener(@TempDir Path dir) throws Exception {
        Path ca = Files.writeString(dir.resolve("master-ca.pem"), "-----BEGIN CERTIFICATE-----\n");
        Options o = Options.parse(List.of("--node", "--listen", "0.0.0.0:9443", "--master-url", "https://master.example.test:8889",
                "--registration-token", "rt-1", "--master-ca", "master-ca.pem", "--hold-secs=20", "--state", "st"), dir, () -> "h");
        assertEquals("https://master.example.test:8889", o.masterUrl());
        assertEquals("rt-1", o.registrationToken());
        assertEquals(ca, o.masterCa());
        assertEquals(20, o.holdSecs());
        assertEquals("0.0.0.0", o.host(), "the node still serves its own API, which it calls itself");
        Map<String, Object> c = new java.util.HashMap<>();
        Serve.putPullProperties(o, c);
        assertEquals(Map.of("vivarium.node.master.url", "https://master.example.test:8889", "vivarium.node.registration.token", "rt-1",
                "vivarium.node.master.ca", ca.toString(), "vivarium.node.hold.secs", "20",
                "vivarium.node.self.url", "https://127.0.0.1:9443"), c);

        Path state = dir.resolve("registered");
        Files.createDirectories(state.resolve("pki/node"));
        Files.writeString(state.resolve("pki/node/master-credential"), "cred\n");
        Options registered = Options.parse(List.of("--node", "--master-url", "http://10.0.0.1:8889/", "--master-plain-http", "--host",
                "::", "--port", "9000", "--state", state.toString()), dir, () -> "h");
        assertEquals("http://127.0.0.1:8889", Options.parse(List.of("--node", "--master-url", "http://127.0.0.1:8889",
                "--state", state.toString()), dir, () -> "h").masterUrl(), "plain HTTP on this host's loopback needs no flag");
        assertNull(registered.registrationToken(), "a node with its credential needs no token");
        assertEquals(Options.DEFAULT_HOLD_SECS, registered.holdSecs());
        Map<String, Object> d = new java.util.HashMap<>();
        Serve.putPullProperties(registered, d);
        assertEquals(Map.of("vivarium.node.master.url", "http://10.0.0.1:8889/", "vivarium.node.hold.secs", "5",
                "vivarium.node.self.url", "https://[::1]:9000"), d);

        Options listening = Options.parse(List.of("--node", "--listen", "127.0.0.1:9443"), dir, () -> "h");
        assertNull(listening.masterUrl());
        Map<String, Object> none = new java.util.HashMap<>();
        Serve.putPullProperties(listening, none);
        assertTrue(none.isEmpty(), "a listening node dials nobody");
    }

    @Test
    void pullOptionsThatCannotWorkAreUsageErrors(@TempDir Path dir) throws Exception {
        Files.createDirectories(dir.resolve("not-a-file.pem"));
        Map<List<String>, String> bad = new java.util.LinkedHashMap<>();
        bad.put(List.of("--master-url", "https://m"), "--master-url is an option of a node: add --node");
        bad.put(List.of("--hold-secs", "5"), "--hold-secs is an option of a node: add --node");
        bad.put(List.of("--node", "--registration-token", "t"), "--registration-token goes with --master-url");
        bad.put(List.of("--node", "--master-ca", "ca.pem"), "--master-ca goes with --master-url");
        bad.put(List.of("--node", "--hold-secs", "5"), "--hold-secs goes with --master-url");
        bad.put(List.of("--node", "--master-url", "https://m"), "give --registration-token TOKEN");
        bad.put(List.of("--node", "--master-url", "https://m"), "POST /v1/node/tokens");
        bad.put(List.of("--node", "--master-url", "ftp://m", "--registration-token", "t"), "--master-url: expected http://HOST[:PORT]");
        bad.put(List.of("--node", "--master-url", "m:8889", "--registration-token", "t"), "--master-url: expected");
        bad.put(List.of("--node", "--master-url", "https://m/?x=1", "--registration-token", "t"), "--master-url: expected");
        bad.put(List.of("--node", "--master-url", "https://u:p@m", "--registration-token", "t"), "--master-url: expected");
        bad.put(List.of("--node", "--master-url", "https://m x", "--registration-token", "t"), "is not a URL");
        bad.put(List.of("--node", "--master-url", "https://m", "--registration-token", "a b"), "a token is one word");
        bad.put(List.of("--node", "--master-url", "https://m", "--registration-token", "t", "--master-ca", "missing.pem"),
                "is not a readable file");
        bad.put(List.of("--node", "--master-url", "https://m", "--registration-token", "t", "--master-ca", "not-a-file.pem"),
                "is not a readable file");
        bad.put(List.of("--node", "--master-url", "https://m", "--registration-token", "t", "--hold-secs", "0"), "from 1 to 60");
        bad.put(List.of("--node", "--master-url", "https://m", "--registration-token", "t", "--hold-secs", "61"), "from 1 to 60");
        bad.put(List.of("--node", "--master-url", "https://m", "--registration-token", "t", "--hold-secs", "x"), "from 1 to 60");
        bad.put(List.of("--node", "--master-url", "https://m", "--master-url", "https://n"), "--master-url given twice");
        bad.put(List.of("--node", "--master-url", "http://10.0.0.1:8889", "--registration-token", "t"), "can pose as its master");
        bad.put(List.of("--master-plain-http"), "--master-plain-http is an option of a node: add --node");
        bad.put(List.of("--node", "--master-plain-http"), "--master-plain-http goes with --master-url");
        bad.forEach((args, expected) -> {
            String message = assertThrows(Options.UsageException.class, () -> Options.parse(args, dir, () -> "h"), args.toString())
                    .getMessage();
            assertTrue(message.contains(expected), args + ": " + message);
        });
    }

    @Test
    void aNodeRunsTheFleetFeatureWhateverFeaturesAreNamed() throws Exception {
        Options node = Options.parse(List.of("--node", "--features", "core,api-v1"), CWD, () -> "h");
        assertEquals(List.of("core", "api-v1", "fleet"), Serve.withNodeFeatures(node, node.features()));
        Options named = Options.parse(List.of("--node", "--features", "fleet,core"), CWD, () -> "h");
        assertEquals(List.of("fleet", "core"), Serve.withNodeFeatures(named, named.features()), "named once, where it was named");
        Options plain = Options.parse(List.of("--features", "core"), CWD, () -> "h");
        assertEquals(List.of("core"), Serve.withNodeFeatures(plain, plain.features()));
        assertTrue(Serve.withNodeFeatures(node, Options.DEFAULT_FEATURES).containsAll(Options.DEFAULT_FEATURES));
        assertTrue(Serve.withNodeFeatures(node, Options.DEFAULT_FEATURES).contains("fleet"));
    }

    @Test
    void hostsInUrls() {
        assertEquals("127.0.0.1", Options.urlHost("127.0.0.1"));
        assertEquals("[::1]", Options.urlHost("::1"));
        assertEquals("127.0.0.1", Options.probeHost("0.0.0.0"));
        assertEquals("[::1]", Options.probeHost("::"));
        assertEquals("localhost", Options.probeHost("localhost"));
    }

    @Test
    void mainExitsTwoWithUsageOnStderr() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
        PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8);
        assertEquals(2, Main.run(List.of(), Caller.thisProcess(), o, e));
        assertEquals(2, Main.run(List.of("frobnicate"), Caller.thisProcess(), o, e));
        assertEquals(2, Main.run(List.of("serve", "--port", "nope"), Caller.thisProcess(), o, e));
        assertEquals("", out.toString(StandardCharsets.UTF_8));
        String text = err.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("usage: vivarium serve"), text);
        assertTrue(text.contains("'nope' is not a number"), text);
        assertEquals(0, Main.run(List.of("help"), Caller.thisProcess(), o, e));
        assertEquals(0, Main.run(List.of("serve", "--port", "1", "--help"), Caller.thisProcess(), o, e));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("usage: vivarium serve"));
    }

    @Test
    void shellQuoting() {
        assertEquals("/tmp/vv-state/tokens", Serve.shellWord("/tmp/vv-state/tokens"));
        assertEquals("'/tmp/a b/it'\\''s'", Serve.shellWord("/tmp/a b/it's"));
    }
}
