package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.interfaces.ECPublicKey;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A node's certificate, key, pairing secret and pairing code, as {@code serve --node} makes and keeps them. */
class NodePkiTest {

    @TempDir
    Path state;

    private NodePki pki;
    private final List<String> created = new ArrayList<>();

    @BeforeEach
    void firstStart() throws Exception {
        pki = NodePki.prepare(state, "f3", created);
    }

    @Test
    void theFirstStartMakesEveryFileOwnerOnly() throws Exception {
        assertEquals(state.resolve("pki/node"), pki.dir());
        assertEquals("rwx------", mode(state.resolve("pki")));
        assertEquals("rwx------", mode(pki.dir()));
        for (Path f : List.of(pki.cert(), pki.key(), pki.secret(), pki.pairingCode())) {
            assertEquals("rw-------", mode(f), f.toString());
        }
        try (Stream<Path> files = Files.list(pki.dir())) {
            assertEquals(List.of("cert.pem", "key.pem", "pairing-code", "pairing-secret"),
                    files.map(p -> p.getFileName().toString()).sorted().toList(), "no temporary key store or file left behind");
        }
        assertEquals(2, created.size(), created.toString());
    }

    @Test
    void theCertificateIsASelfSignedP256OneForTenYearsWithAPkcs8Key() throws Exception {
        String certText = Files.readString(pki.cert());
        String keyText = Files.readString(pki.key());
        assertTrue(certText.startsWith("-----BEGIN CERTIFICATE-----\n") && certText.endsWith("-----END CERTIFICATE-----\n"), certText);
        assertTrue(keyText.startsWith("-----BEGIN PRIVATE KEY-----\n") && keyText.endsWith("-----END PRIVATE KEY-----\n"),
                "unencrypted PKCS#8");
        TlsFiles tls = TlsFiles.load(pki.cert(), pki.key()); // the pair belongs together, as the launcher checks
        X509Certificate cert = tls.leaf();
        assertEquals("CN=vivarium-node f3", cert.getSubjectX500Principal().getName());
        assertEquals(cert.getSubjectX500Principal(), cert.getIssuerX500Principal());
        cert.verify(cert.getPublicKey());
        assertEquals(256, ((ECPublicKey) cert.getPublicKey()).getParams().getCurve().getField().getFieldSize());
        assertEquals("SHA256withECDSA", cert.getSigAlgName());
        Duration valid = Duration.between(cert.getNotBefore().toInstant(), cert.getNotAfter().toInstant());
        assertTrue(valid.toDays() >= 3650 && valid.toDays() <= 3651, valid.toString());
        assertTrue(cert.getNotBefore().toInstant().isBefore(Instant.now().plusSeconds(1)));
        assertEquals("127.0.0.1", tls.nameFor("127.0.0.1"), "the launcher's probe names loopback as it is");
    }

    @Test
    void theCodeIsTheCertificatesSha256AndTheSecret() throws Exception {
        String secret = Files.readString(pki.secret(), StandardCharsets.US_ASCII).strip();
        assertTrue(secret.matches("[0-9a-f]{32}"), secret);
        String code = Files.readString(pki.pairingCode(), StandardCharsets.US_ASCII).strip();
        assertTrue(code.matches("[0-9a-f]{64}\\.[0-9a-f]{32}"), code);
        byte[] der = TlsFiles.certificates("cert", pki.cert()).getFirst().getEncoded();
        assertEquals(HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(der)) + "." + secret, code);
    }

    @Test
    void aRestartKeepsEverything() throws Exception {
        byte[] cert = Files.readAllBytes(pki.cert());
        byte[] key = Files.readAllBytes(pki.key());
        String code = Files.readString(pki.pairingCode());
        List<String> again = new ArrayList<>();
        NodePki second = NodePki.prepare(state, "f3", again);
        assertEquals(List.of(), again, "nothing made anew");
        assertEquals(new String(cert, StandardCharsets.US_ASCII), Files.readString(second.cert()));
        assertEquals(new String(key, StandardCharsets.US_ASCII), Files.readString(second.key()));
        assertEquals(code, Files.readString(second.pairingCode()));
    }

    @Test
    void deletingTheSecretMakesANewSecretAndCodeForTheSameCertificate() throws Exception {
        String cert = Files.readString(pki.cert());
        String[] before = Files.readString(pki.pairingCode()).strip().split("\\.");
        Files.delete(pki.secret());
        List<String> again = new ArrayList<>();
        NodePki.prepare(state, "f3", again);
        assertEquals(1, again.size(), again.toString());
        assertTrue(again.getFirst().contains("pairing secret"), again.getFirst());
        String secret = Files.readString(pki.secret()).strip();
        String[] after = Files.readString(pki.pairingCode()).strip().split("\\.");
        assertEquals(cert, Files.readString(pki.cert()), "the certificate stays");
        assertEquals(before[0], after[0]);
        assertNotEquals(before[1], after[1]);
        assertEquals(secret, after[1]);
        assertEquals("rw-------", mode(pki.secret()));
    }

    @Test
    void aMissingCertificateOrKeyMakesANewPairAndRewritesTheCode() throws Exception {
        for (Path gone : List.of(pki.cert(), pki.key())) {
            String oldCert = Files.readString(pki.cert());
            String secret = Files.readString(pki.secret()).strip();
            Files.delete(gone);
            NodePki.prepare(state, "f3", new ArrayList<>());
            assertNotEquals(oldCert, Files.readString(pki.cert()));
            TlsFiles.load(pki.cert(), pki.key());
            String code = Files.readString(pki.pairingCode()).strip();
            assertEquals(NodePki.certificateSha256(pki.cert()) + "." + secret, code, "the secret stays");
        }
    }

    @Test
    void aStaleCodeIsRewrittenAtStart() throws Exception {
        String code = Files.readString(pki.pairingCode());
        Files.delete(pki.pairingCode());
        NodePki.prepare(state, "f3", new ArrayList<>());
        assertEquals(code, Files.readString(pki.pairingCode()));
        Files.writeString(pki.pairingCode(), "0".repeat(64) + "." + "1".repeat(32) + "\n");
        NodePki.prepare(state, "f3", new ArrayList<>());
        assertEquals(code, Files.readString(pki.pairingCode()));
    }

    @Test
    void aSecretThatIsNotOneIsRefusedWithWhatToDo() throws Exception {
        Files.writeString(pki.secret(), "hunter2\n");
        String message = assertThrows(IOException.class, () -> NodePki.prepare(state, "f3", new ArrayList<>())).getMessage();
        assertTrue(message.contains("is not 32 lowercase hex digits; delete it and restart the node"), message);
    }

    @Test
    void aLooseDirectoryIsMadeOwnerOnlyAgain() throws Exception {
        Files.setPosixFilePermissions(pki.dir(), PosixFilePermissions.fromString("rwxr-xr-x"));
        NodePki.prepare(state, "f3", new ArrayList<>());
        assertEquals("rwx------", mode(pki.dir()));
    }

    private static String mode(Path p) throws IOException {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
    }
}
