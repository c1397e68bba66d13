package io.vivarium.launcher;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.MessageDigest;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import io.vivarium.common.files.AtomicFiles;

/**
 * The identity of a node (seed 003, "POST /v1/nodes"), in {@code <state>/pki/node/} (mode 0700):
 * <ul>
 * <li>{@code cert.pem}, {@code key.pem}: a self-signed EC P-256 certificate, {@code CN=vivarium-node <id>},
 * valid 10 years, and its unencrypted PKCS#8 key, which the node serves HTTPS with;</li>
 * <li>{@code pairing-secret}: 32 lowercase hex digits, what the master presents as its bearer token;</li>
 * <li>{@code pairing-code}: {@code <SHA-256 of the certificate's DER, lowercase hex>.<secret>}, what the
 * operator gives the master, which pins the certificate by the first half.</li>
 * </ul>
 * All kept across restarts and written atomically, mode 0600. A missing certificate or key makes a
 * new pair (so a new pairing code); a missing secret makes a new secret (the way to change the code:
 * delete {@code pairing-secret} and restart); the code is rewritten from both at every start, so it
 * never names a certificate or secret that is gone. The key pair is made by the JDK's own
 * {@code keytool} (the JDK has no public API that signs a certificate).
 */
final class NodePki {

    /** Lowercase hex, as the master's pairing-code parser expects. */
    private static final Pattern SECRET = Pattern.compile("[0-9a-f]{32}");
    private static final Set<PosixFilePermission> OWNER_ONLY_DIR = PosixFilePermissions.fromString("rwx------");
    private static final long KEYTOOL_TIMEOUT_SECONDS = 120;
    private static final String ALIAS = "node";

    private final Path dir;

    private NodePki(Path dir) {
        this.dir = dir;
    }

    Path dir() {
        return dir;
    }

    Path cert() {
        return dir.resolve("cert.pem");
    }

    Path key() {
        return dir.resolve("key.pem");
    }

    Path secret() {
        return dir.resolve("pairing-secret");
    }

    Path pairingCode() {
        return dir.resolve("pairing-code");
    }

    /**
     * Makes what is missing of the node's identity under {@code state} and rewrites the pairing code.
     * The state directory must be locked by the caller: two starts would make two certificates.
     *
     * @param created receives one line per file made anew, for the log
     */
    static NodePki prepare(Path state, String nodeId, List<String> created) throws IOException {
        Path pki = state.resolve("pki");
        NodePki files = new NodePki(pki.resolve("node"));
        ownerOnlyDirectory(pki);
        ownerOnlyDirectory(files.dir);
        if (!Files.isRegularFile(files.cert()) || !Files.isRegularFile(files.key())) {
            files.newCertificate(nodeId);
            created.add("a new node certificate " + files.cert() + " (so a new pairing code)");
        }
        String secret = files.readSecret();
        if (secret == null) {
            byte[] random = new byte[16];
            new SecureRandom().nextBytes(random);
            secret = HexFormat.of().formatHex(random);
            AtomicFiles.write(files.secret(), (secret + "\n").getBytes(StandardCharsets.US_ASCII));
            created.add("a new pairing secret " + files.secret() + " (so a new pairing code)");
        }
        String code = certificateSha256(files.cert()) + "." + secret;
        AtomicFiles.write(files.pairingCode(), (code + "\n").getBytes(StandardCharsets.US_ASCII));
        return files;
    }

    /** The pairing code's first half: the lowercase hex SHA-256 of the first certificate's DER encoding in {@code pem}. */
    static String certificateSha256(Path pem) throws IOException {
        try {
            X509Certificate cert = TlsFiles.certificates("the node certificate", pem).getFirst();
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(cert.getEncoded()));
        } catch (TlsFiles.Refused e) {
            throw new IOException(e.getMessage() + "; delete cert.pem and key.pem there to make a new pair"
                    + " (the pairing code changes: give the master the new one)", e);
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot digest the node certificate " + pem + ": " + e, e);
        }
    }

    /** The secret, or null if the file is missing (to be made anew); a file that is not a secret is refused. */
    private String readSecret() throws IOException {
        String text;
        try {
            text = Files.readString(secret(), StandardCharsets.US_ASCII).strip();
        } catch (NoSuchFileException e) {
            return null;
        }
        if (!SECRET.matcher(text).matches()) {
            throw new IOException(secret() + " is not 32 lowercase hex digits; delete it and restart the node to make a new"
                    + " secret (the pairing code changes: give the master the new one)");
        }
        return text;
    }

    private static void ownerOnlyDirectory(Path dir) throws IOException {
        Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(OWNER_ONLY_DIR));
        Files.setPosixFilePermissions(dir, OWNER_ONLY_DIR);
    }

    /** Runs keytool into a PKCS#12 file in a private temporary folder, and writes its key pair out as PEM. */
    private void newCertificate(String nodeId) throws IOException {
        Path work = Files.createTempDirectory(dir, ".keytool-", PosixFilePermissions.asFileAttribute(OWNER_ONLY_DIR));
        try {
            Path p12 = work.resolve("node.p12"); // keytool refuses an existing empty file: it makes this one
            byte[] random = new byte[24];
            new SecureRandom().nextBytes(random);
            String password = HexFormat.of().formatHex(random);
            keytool(List.of("-genkeypair", "-alias", ALIAS, "-keyalg", "EC", "-groupname", "secp256r1", "-sigalg", "SHA256withECDSA",
                    "-dname", "CN=vivarium-node " + nodeId, "-validity", "3650",
                    // loopback names let the launcher's probe and a local curl --cacert check the name
                    "-ext", "SAN=dns:localhost,ip:127.0.0.1,ip:::1",
                    "-keystore", p12.toString(), "-storetype", "PKCS12",
                    "-storepass:env", "VIVARIUM_KEYTOOL_PASSWORD", "-keypass:env", "VIVARIUM_KEYTOOL_PASSWORD", "-noprompt"),
                    password);
            KeyStore store = KeyStore.getInstance("PKCS12");
            try (InputStream in = Files.newInputStream(p12)) {
                store.load(in, password.toCharArray());
            }
            PrivateKey key = (PrivateKey) store.getKey(ALIAS, password.toCharArray());
            Certificate cert = store.getCertificate(ALIAS);
            if (key == null || cert == null) {
                throw new IOException("keytool wrote no key pair '" + ALIAS + "' into " + p12);
            }
            // The certificate goes first and comes back last: a start that stops in between leaves no
            // certificate, so the next one makes a new pair instead of serving a key that is not its own.
            AtomicFiles.delete(cert());
            AtomicFiles.write(key(), pem("PRIVATE KEY", key.getEncoded()));
            AtomicFiles.write(cert(), pem("CERTIFICATE", cert.getEncoded()));
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot read the key pair keytool made: " + e, e);
        } finally {
            deleteTree(work);
        }
    }

    private static void keytool(List<String> args, String password) throws IOException {
        Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
        if (!Files.isExecutable(keytool)) {
            throw new IOException(keytool + " is not there: the node certificate is made with the keytool of the Java that"
                    + " runs the daemon (a JDK or a full JRE)");
        }
        List<String> command = new ArrayList<>();
        command.add(keytool.toString());
        command.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().put("VIVARIUM_KEYTOOL_PASSWORD", password); // not on a command line others can read
        Process p = pb.start();
        String output;
        try (InputStream in = p.getInputStream()) {
            output = new String(in.readAllBytes(), StandardCharsets.UTF_8).strip();
        }
        try {
            if (!p.waitFor(KEYTOOL_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException("keytool did not make the node certificate within " + KEYTOOL_TIMEOUT_SECONDS + " s");
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while keytool made the node certificate", e);
        }
        if (p.exitValue() != 0) {
            throw new IOException("keytool failed (exit " + p.exitValue() + ") making the node certificate: " + output);
        }
    }

    static byte[] pem(String label, byte[] der) {
        String body = Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der);
        return ("-----BEGIN " + label + "-----\n" + body + "\n-----END " + label + "-----\n").getBytes(StandardCharsets.US_ASCII);
    }

    private static void deleteTree(Path root) throws IOException {
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (NoSuchFileException e) {
            // already gone
        }
    }
}
