package io.vivarium.itests.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code serve --tls-cert/--tls-key} (issue 23): HTTPS only on the daemon's port, with a
 * certificate made here by openssl; the operator's tools reach it with {@code --cacert}; a key of
 * another certificate stops the start.
 */
class HttpsIT {

    @RegisterExtension
    static final Daemons daemons = new Daemons();

    @TempDir
    static Path certs;

    @TempDir
    Path tmp;

    private static Path cert;
    private static Path key;

    @BeforeAll
    static void certificate() throws Exception {
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/openssl")),
                "openssl is not installed (apt-get install openssl): it makes the test certificate");
        cert = certs.resolve("cert.pem");
        key = certs.resolve("key.pem");
        run(List.of("/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key.toString(), "-out", cert.toString()), 0);
    }

    @Test
    void servesHttpsOnlyAndTheOperatorsToolsReachItWithTheCertificate() throws Exception {
        Path state = tmp.resolve("state");
        Daemon daemon = daemons.start(state, List.of("--tls-cert", cert.toString(), "--tls-key", key.toString()));
        String url = daemon.baseUrl();
        assertTrue(url.startsWith("https://"), url);
        daemon.awaitOutput("Vivarium is listening on " + url, Duration.ofSeconds(5));
        daemon.awaitOutput("curl --cacert " + cert + " -H", Duration.ofSeconds(5));

        HttpClient trusting = HttpClient.newBuilder().sslContext(trusting(cert)).connectTimeout(Duration.ofSeconds(5)).build();
        HttpResponse<String> health = Api.judged(trusting.send(get(url + "/healthz"), HttpResponse.BodyHandlers.ofString()), null);
        assertEquals(200, health.statusCode(), health.body());

        HttpClient plain = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        String plainUrl = url.replace("https://", "http://") + "/healthz";
        assertThrows(IOException.class, () -> plain.send(get(plainUrl), HttpResponse.BodyHandlers.ofString()),
                "no plain HTTP on the port");

        String tokens = state.resolve("tokens").toString();
        String listed = run(launcher("features", "list", "--url", url, "--token-file", tokens, "--cacert", cert.toString()), 0);
        assertTrue(listed.contains("api-v1"), listed);
        String refused = run(launcher("features", "list", "--url", url, "--token-file", tokens), 1);
        assertTrue(refused.contains("is not trusted") && refused.contains("pass --cacert PEM"), refused);
    }

    @Test
    void aKeyOfAnotherCertificateStopsTheStartNamingTheFiles() throws Exception {
        Path otherKey = tmp.resolve("other.pem");
        run(List.of("/usr/bin/openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                "-out", otherKey.toString()), 0);
        Daemon daemon = new Daemon(tmp.resolve("state"), List.of("--tls-cert", cert.toString(), "--tls-key", otherKey.toString()),
                List.of());
        IllegalStateException e = assertThrows(IllegalStateException.class, daemon::start);
        assertTrue(daemon.awaitExit(Duration.ofSeconds(30)), "the launcher ends after the refusal");
        assertEquals(1, daemon.exitValue(), e.getMessage());
        assertTrue(e.getMessage().contains("vivarium: --tls-key " + otherKey + " does not match the certificate in --tls-cert "
                + cert), e.getMessage());
        assertTrue(Files.notExists(tmp.resolve("state")), "refused before the state directory is made");
    }

    private static HttpRequest get(String url) {
        return HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).GET().build();
    }

    private static SSLContext trusting(Path pem) throws Exception {
        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        try (InputStream in = Files.newInputStream(pem)) {
            trust.setCertificateEntry("daemon", CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, tmf.getTrustManagers(), null);
        return context;
    }

    /** {@code plugins|features} of the distribution's launcher, as {@code ./vivarium features ...} runs it. */
    private static List<String> launcher(String... args) {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar", Daemon.distribution().resolve("lib/vivarium-launcher.jar").toString()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** Runs {@code cmd}, expects {@code exitCode}, and returns what it printed (both streams). */
    private static String run(List<String> cmd, int exitCode) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("did not finish within 60 s: " + cmd);
        }
        assertEquals(exitCode, p.exitValue(), String.join(" ", cmd) + " printed:\n" + out);
        return out;
    }
}
