package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The PEM files of {@code serve --tls-cert/--tls-key}, made by openssl here, as an operator makes them. */
class TlsFilesTest {

    @TempDir
    static Path tmp;

    private static Path rsaCert;
    private static Path rsaKey;
    private static Path ecCert;
    private static Path ecKey;

    @BeforeAll
    static void certificates() throws Exception {
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/openssl")),
                "openssl is not installed (apt-get install openssl): it makes the test certificates");
        rsaKey = tmp.resolve("rsa.key");
        rsaCert = tmp.resolve("rsa.pem");
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", rsaKey.toString(), "-out", rsaCert.toString());
        ecKey = tmp.resolve("ec.key");
        ecCert = tmp.resolve("ec.pem");
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", "/CN=vivarium.example.test", "-addext", "subjectAltName=DNS:*.example.test",
                "-keyout", ecKey.toString(), "-out", ecCert.toString());
    }

    @Test
    void rsaAndEcPairsLoad() throws Exception {
        assertEquals("CN=localhost", TlsFiles.load(rsaCert, rsaKey).leaf().getSubjectX500Principal().getName());
        assertEquals("CN=vivarium.example.test", TlsFiles.load(ecCert, ecKey).leaf().getSubjectX500Principal().getName());
    }

    @Test
    void aKeyOfAnotherCertificateIsRefused() throws Exception {
        Path otherKey = tmp.resolve("other-rsa.key");
        openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", otherKey.toString());
        String message = refusal(rsaCert, otherKey);
        assertTrue(message.startsWith("--tls-key " + otherKey + " does not match the certificate in --tls-cert " + rsaCert), message);

        message = refusal(rsaCert, ecKey);
        assertTrue(message.contains("does not match") && message.contains("(the key is EC, the certificate's key RSA)"), message);
    }

    @Test
    void missingAndGarbledFilesAreRefusedByName() throws Exception {
        Path missing = tmp.resolve("missing.pem");
        assertEquals("--tls-cert " + missing + ": no such file", refusal(missing, rsaKey));
        assertEquals("--tls-key " + missing + ": no such file", refusal(rsaCert, missing));
        assertTrue(refusal(tmp, rsaKey).startsWith("--tls-cert " + tmp + ": cannot read it"), "a directory");

        Path garbled = tmp.resolve("garbled.pem");
        Files.writeString(garbled, "-----BEGIN CERTIFICATE-----\nTm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n");
        assertTrue(refusal(garbled, rsaKey).startsWith("--tls-cert " + garbled + ": certificate 1 is damaged"), refusal(garbled, rsaKey));

        String swapped = refusal(rsaKey, rsaCert);
        assertTrue(swapped.startsWith("--tls-cert " + rsaKey + ": no '-----BEGIN CERTIFICATE-----' block in it"), swapped);
        assertTrue(swapped.endsWith("not a private key"), swapped);
        swapped = refusal(rsaCert, rsaCert);
        assertTrue(swapped.startsWith("--tls-key " + rsaCert + ": no '-----BEGIN PRIVATE KEY-----' block in it"), swapped);

        Path damagedKey = tmp.resolve("damaged.key");
        Files.writeString(damagedKey, "-----BEGIN PRIVATE KEY-----\nTm90IGEga2V5\n-----END PRIVATE KEY-----\n");
        assertTrue(refusal(rsaCert, damagedKey).startsWith("--tls-key " + damagedKey + ": not a readable RSA or EC private key"));
    }

    @Test
    void keysInOtherFormsAreRefusedWithTheConversion() throws Exception {
        Path pkcs1 = tmp.resolve("pkcs1.key");
        openssl("pkey", "-in", rsaKey.toString(), "-traditional", "-out", pkcs1.toString());
        assertTrue(Files.readString(pkcs1).startsWith("-----BEGIN RSA PRIVATE KEY-----"), "openssl wrote PKCS#1");
        assertEquals("--tls-key " + pkcs1 + ": a 'RSA PRIVATE KEY' key; serve reads an unencrypted PKCS#8 key ('BEGIN PRIVATE KEY'):"
                + " convert it with openssl pkcs8 -topk8 -nocrypt -in " + pkcs1 + " -out " + pkcs1 + ".pk8 and pass that file",
                refusal(rsaCert, pkcs1));

        Path encrypted = tmp.resolve("encrypted.key");
        openssl("pkcs8", "-topk8", "-in", rsaKey.toString(), "-passout", "pass:secret", "-out", encrypted.toString());
        assertTrue(refusal(rsaCert, encrypted).contains("a 'ENCRYPTED PRIVATE KEY' key; serve reads an unencrypted PKCS#8 key"));
    }

    @Test
    void theWholeChainIsReadLeafFirst() throws Exception {
        Path chain = tmp.resolve("chain.pem");
        Files.writeString(chain, Files.readString(rsaCert) + "junk between blocks\n" + Files.readString(ecCert));
        List<java.security.cert.X509Certificate> certs = TlsFiles.certificates("--tls-cert", chain);
        assertEquals(2, certs.size());
        assertEquals("CN=vivarium.example.test", certs.get(1).getSubjectX500Principal().getName());
        assertEquals("CN=localhost", TlsFiles.load(chain, rsaKey).leaf().getSubjectX500Principal().getName());
    }

    @Test
    void theKeyStoreHoldsKeyAndChainForItsOwnerOnly() throws Exception {
        Path store = tmp.resolve("state").resolve("tls").resolve("keystore.p12");
        char[] password = "per-start".toCharArray();
        TlsFiles files = TlsFiles.load(rsaCert, rsaKey);
        files.writeKeyStore(store, password);
        files.writeKeyStore(store, password); // rewritten at the next start

        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(store)));
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(store.getParent())));
        try (var listing = Files.list(store.getParent())) {
            assertEquals(List.of(store), listing.toList(), "no temporary file left");
        }
        KeyStore loaded = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(store)) {
            loaded.load(in, password);
        }
        String alias = loaded.aliases().nextElement();
        assertInstanceOf(PrivateKey.class, loaded.getKey(alias, password));
        Certificate[] chain = loaded.getCertificateChain(alias);
        assertEquals(files.leaf(), chain[0]);
    }

    @Test
    void theProbeAsksForANameTheCertificateHas() throws Exception {
        TlsFiles rsa = TlsFiles.load(rsaCert, rsaKey);
        assertEquals("127.0.0.1", rsa.nameFor("127.0.0.1"));
        assertEquals("localhost", rsa.nameFor("[::1]"), "an address it lacks: its first DNS name");
        assertEquals("vivarium.example.test", TlsFiles.load(ecCert, ecKey).nameFor("127.0.0.1"), "a wildcard filled in");
    }

    private static String refusal(Path cert, Path key) {
        return assertThrows(TlsFiles.Refused.class, () -> TlsFiles.load(cert, key)).getMessage();
    }

    private static void openssl(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("/usr/bin/openssl"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("openssl did not finish: " + cmd);
        }
        assertEquals(0, p.exitValue(), String.join(" ", cmd) + ":\n" + out);
    }
}
