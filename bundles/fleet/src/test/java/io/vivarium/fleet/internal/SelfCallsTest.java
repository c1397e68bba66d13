package io.vivarium.fleet.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyStore;
import java.util.Base64;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node's calls to its own API (and the poll loop that feeds them) against a small HTTPS server
 * standing in for the node's listener, with a certificate keytool makes, and a plain-HTTP stand-in
 * for the master.
 */
class SelfCallsTest {
    private static final String SECRET = "0123456789abcdef0123456789abcdef";
    private static final String PASSWORD = "test-password";

    @TempDir
    static Path tmp;
    static Path pki;
    static HttpsServer node;
    static ExecutorService serverThreads = Executors.newCachedThreadPool();
    static final Map<String, String> seen = new ConcurrentHashMap<>();

    @BeforeAll
    static void nodeListener() throws Exception {
        pki = Files.createDirectories(tmp.resolve("pki").resolve("node"));
        Path p12 = keyPair(tmp.resolve("node.p12"));
        KeyStore store = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(p12)) {
            store.load(in, PASSWORD.toCharArray());
        }
        Files.writeString(pki.resolve("cert.pem"), pem(store.getCertificate("node").getEncoded()));
        Files.writeString(pki.resolve("pairing-secret"), SECRET + "\n");
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(store, PASSWORD.toCharArray());
        SSLContext tls = SSLContext.getInstance("TLS");
        tls.init(kmf.getKeyManagers(), null, null);
        node = HttpsServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        node.setHttpsConfigurator(new HttpsConfigurator(tls));
        node.setExecutor(serverThreads);
        node.createContext("/", SelfCallsTest::nodeApi);
        node.start();
    }

    @AfterAll
    static void stop() {
        if (node != null) {
            node.stop(0);
        }
        serverThreads.shutdownNow();
    }

    /** Echoes what it was asked; {@code /busy} is a 503 with Retry-After, {@code /empty} a 204. */
    private static void nodeApi(HttpExchange x) throws IOException {
        byte[] body = x.getRequestBody().readAllBytes();
        String key = x.getRequestURI().toString();
        seen.put(key, x.getRequestMethod() + " auth=" + x.getRequestHeaders().getFirst("Authorization") + " tenant="
                + x.getRequestHeaders().getFirst("Vivarium-Tenant") + " role=" + x.getRequestHeaders().getFirst("Vivarium-Role")
                + " type=" + x.getRequestHeaders().getFirst("Content-Type") + " body=" + new String(body, StandardCharsets.UTF_8));
        if (key.startsWith("/busy")) {
            x.getResponseHeaders().add("Retry-After", "7");
            respond(x, 503, "{\"error\": \"busy\"}");
        } else if (key.startsWith("/empty")) {
            x.sendResponseHeaders(204, -1);
            x.close();
        } else {
            respond(x, 201, "answer to " + key);
        }
    }

    private static SelfCalls selfCalls() throws IOException {
        return new SelfCalls("https://127.0.0.1:" + node.getAddress().getPort(), pki.resolve("pairing-secret"), pki.resolve("cert.pem"));
    }

    @Test
    void aCallIsMadeOnTheNodesOwnApiAsTheMasterWouldMakeIt() throws Exception {
        String body = Base64.getEncoder().encodeToString("{\"args\": [\"true\"]}".getBytes(StandardCharsets.UTF_8));
        PullWire.Result r = selfCalls().call(new PullWire.Call("c1", "POST", "/v1/sandboxes/s1/exec?x=1", "acme", "admin",
                "application/json", body));
        assertEquals("c1", r.id());
        assertEquals(201, r.status());
        assertNull(r.retryAfter());
        assertEquals("answer to /v1/sandboxes/s1/exec?x=1", decode(r.body()));
        assertEquals("POST auth=Bearer " + SECRET + " tenant=acme role=admin type=application/json body={\"args\": [\"true\"]}",
                seen.get("/v1/sandboxes/s1/exec?x=1"));

        PullWire.Result busy = selfCalls().call(new PullWire.Call("c2", "GET", "/busy", "acme", "user", null, null));
        assertEquals(503, busy.status());
        assertEquals("7", busy.retryAfter());
        assertEquals("{\"error\": \"busy\"}", decode(busy.body()));
        assertTrue(seen.get("/busy").startsWith("GET auth=Bearer " + SECRET + " tenant=acme role=user type=null body="),
                seen.get("/busy"));

        PullWire.Result empty = selfCalls().call(new PullWire.Call("c3", "DELETE", "/empty", "acme", "user", null, null));
        assertEquals(204, empty.status());
        assertEquals("", decode(empty.body()));
    }

    @Test
    void anotherCertificateOrNoListenerIsA502ThatSaysWhy() throws Exception {
        Path other = Files.createDirectories(tmp.resolve("other"));
        KeyStore store = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(keyPair(other.resolve("other.p12")))) {
            store.load(in, PASSWORD.toCharArray());
        }
        Files.writeString(other.resolve("cert.pem"), pem(store.getCertificate("node").getEncoded()));
        SelfCalls wrong = new SelfCalls("https://127.0.0.1:" + node.getAddress().getPort(), pki.resolve("pairing-secret"),
                other.resolve("cert.pem"));
        PullWire.Result r = wrong.call(new PullWire.Call("c4", "GET", "/v1/sandboxes", "acme", "user", null, null));
        assertEquals(502, r.status());
        assertTrue(decode(r.body()).contains("not the pairing code's"), decode(r.body()));

        int closedPort;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            closedPort = s.getLocalPort();
        }
        SelfCalls nobody = new SelfCalls("https://127.0.0.1:" + closedPort, pki.resolve("pairing-secret"), pki.resolve("cert.pem"));
        JsonNode error = FleetJson.MAPPER.readTree(Base64.getDecoder().decode(
                nobody.call(new PullWire.Call("c5", "GET", "/v1/sandboxes", "acme", "user", null, null)).body()));
        assertTrue(error.get("error").asText().contains("could not make GET /v1/sandboxes on its own API"), error.toString());
    }

    @Test
    void thePollerRegistersSavesItsCredentialPollsAndPostsTheAnswers() throws Exception {
        AtomicInteger polls = new AtomicInteger();
        Map<String, String> master = new ConcurrentHashMap<>();
        CountDownLatch answered = new CountDownLatch(1);
        HttpServer m = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        m.setExecutor(serverThreads);
        m.createContext("/fleet/v1/node/register", x -> {
            master.put("register", x.getRequestHeaders().getFirst("Authorization") + " " + new String(x.getRequestBody().readAllBytes(),
                    StandardCharsets.UTF_8));
            respond(x, 201, "{\"id\": \"f3\", \"pool\": \"default\", \"credential\": \"cred-1\"}");
        });
        m.createContext("/fleet/v1/node/poll", x -> {
            x.getRequestBody().readAllBytes();
            if (!("Bearer cred-1").equals(x.getRequestHeaders().getFirst("Authorization"))) {
                respond(x, 401, "{\"error\": \"unknown credential\"}");
                return;
            }
            master.put("poll", x.getRequestURI().getQuery());
            if (polls.incrementAndGet() == 1) {
                String body = Base64.getEncoder().encodeToString("{}".getBytes(StandardCharsets.UTF_8));
                respond(x, 200, "{\"calls\": [{\"id\": \"call-1\", \"method\": \"POST\", \"path\": \"/v1/sandboxes\", \"tenant\": \"acme\","
                        + " \"role\": \"user\", \"content_type\": \"application/json\", \"body\": \"" + body + "\"}]}");
            } else {
                try {
                    Thread.sleep(200); // the hold
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                respond(x, 200, "{\"calls\": []}");
            }
        });
        m.createContext("/fleet/v1/node/results", x -> {
            master.put("results", x.getRequestHeaders().getFirst("Authorization") + " " + new String(x.getRequestBody().readAllBytes(),
                    StandardCharsets.UTF_8));
            x.sendResponseHeaders(204, -1);
            x.close();
            answered.countDown();
        });
        m.start();
        Path secretFile = pki.resolve("pairing-secret");
        Files.deleteIfExists(pki.resolve("master-credential"));
        NodePullConfig config = NodePullConfig.from(Map.of("vivarium.node.master.url", "http://127.0.0.1:" + m.getAddress().getPort() + "/fleet/",
                "vivarium.node.registration.token", "reg-token", "vivarium.node.hold.secs", "3", "vivarium.node.id", "f3",
                "vivarium.node.secret.file", secretFile.toString(),
                "vivarium.node.self.url", "https://127.0.0.1:" + node.getAddress().getPort())::get).orElseThrow();
        NodeHello hello = new NodeHello("f3", "0.1.0", new HostFingerprint("0.1.0", Map.of(), "6.1", "v", "m", "f"), 10, 0, 100);
        try (MasterPoller poller = new MasterPoller(config, () -> hello).start()) {
            assertTrue(answered.await(20, TimeUnit.SECONDS), "the call's answer was posted: " + master);
            assertEquals("cred-1\n", Files.readString(pki.resolve("master-credential")));
            assertEquals(PosixFilePermissions.fromString("rw-------"), Files.getPosixFilePermissions(pki.resolve("master-credential")));
            JsonNode register = FleetJson.MAPPER.readTree(master.get("register").substring("Bearer reg-token ".length()));
            assertTrue(master.get("register").startsWith("Bearer reg-token "), master.get("register"));
            assertEquals("f3", register.get("node_id").asText());
            assertEquals("f3", register.get("hello").get("node_id").asText());
            assertEquals(10, register.get("hello").get("max_sandboxes").asInt());
            assertEquals("hold_secs=3", master.get("poll"));
            assertTrue(master.get("results").startsWith("Bearer cred-1 "), master.get("results"));
            JsonNode results = FleetJson.MAPPER.readTree(master.get("results").substring("Bearer cred-1 ".length())).get("results");
            assertEquals(1, results.size());
            assertEquals("call-1", results.get(0).get("id").asText());
            assertEquals(201, results.get(0).get("status").asInt());
            assertEquals("answer to /v1/sandboxes", decode(results.get(0).get("body").asText()));
            assertNull(results.get(0).get("retry_after"), "nulls are left out");
            assertEquals("POST auth=Bearer " + SECRET + " tenant=acme role=user type=application/json body={}", seen.get("/v1/sandboxes"));
        } finally {
            m.stop(0);
        }
        assertTrue(polls.get() >= 1);
    }

    private static Path keyPair(Path p12) throws Exception {
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "keytool").toString(), "-genkeypair",
                "-alias", "node", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=vivarium-node test", "-validity", "2",
                "-keystore", p12.toString(), "-storetype", "PKCS12", "-storepass", PASSWORD, "-keypass", PASSWORD, "-noprompt")
                .redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0, "keytool: " + output);
        return p12;
    }

    private static String pem(byte[] der) {
        return "-----BEGIN CERTIFICATE-----\n" + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der)
                + "\n-----END CERTIFICATE-----\n";
    }

    private static void respond(HttpExchange x, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        x.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = x.getResponseBody()) {
            out.write(bytes);
        }
    }

    private static String decode(String base64) {
        return new String(Base64.getDecoder().decode(base64), StandardCharsets.UTF_8);
    }
}
