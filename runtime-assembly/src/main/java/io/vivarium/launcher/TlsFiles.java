package io.vivarium.launcher;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.naming.InvalidNameException;
import javax.naming.ldap.LdapName;
import javax.naming.ldap.Rdn;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * The certificate chain and private key of {@code serve --tls-cert C --tls-key K}: PEM files, the
 * chain leaf first, the key unencrypted PKCS#8 (RSA or EC), checked to belong together by a
 * signature the certificate's public key verifies. Each refusal is one line naming the file and
 * what to do about it.
 */
final class TlsFiles {

    /** A file that cannot serve: the message names it and says what to fix. */
    static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;

        Refused(String message) {
            super(message);
        }
    }

    private static final Pattern BLOCK = Pattern.compile("-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \\1-----", Pattern.DOTALL);
    private static final String ALIAS = "vivarium";

    private final Path certFile;
    private final List<X509Certificate> chain;
    private final PrivateKey key;

    private TlsFiles(Path certFile, List<X509Certificate> chain, PrivateKey key) {
        this.certFile = certFile;
        this.chain = chain;
        this.key = key;
    }

    /** Reads both files and checks that the key is the certificate's. */
    static TlsFiles load(Path certFile, Path keyFile) throws Refused {
        List<X509Certificate> chain = certificates("--tls-cert", certFile);
        PrivateKey key = privateKey(keyFile, chain.getFirst().getPublicKey().getAlgorithm());
        checkMatch(chain.getFirst(), key, certFile, keyFile);
        return new TlsFiles(certFile, chain, key);
    }

    Path certFile() {
        return certFile;
    }

    X509Certificate leaf() {
        return chain.getFirst();
    }

    /** Every certificate of a PEM file, in order; {@code option} names the file in a refusal. */
    static List<X509Certificate> certificates(String option, Path file) throws Refused {
        String text = read(option, file);
        List<X509Certificate> certs = new ArrayList<>();
        Matcher m = BLOCK.matcher(text);
        while (m.find()) {
            if (!m.group(1).equals("CERTIFICATE")) {
                continue;
            }
            try {
                CertificateFactory cf = CertificateFactory.getInstance("X.509");
                certs.add((X509Certificate) cf.generateCertificate(new ByteArrayInputStream(decode(m.group(2)))));
            } catch (CertificateException | IllegalArgumentException e) {
                throw new Refused(option + " " + file + ": certificate " + (certs.size() + 1) + " is damaged ("
                        + e.getMessage() + "); give the PEM file the certificate authority or openssl wrote");
            }
        }
        if (certs.isEmpty()) {
            throw new Refused(option + " " + file + ": no '-----BEGIN CERTIFICATE-----' block in it; give the certificate"
                    + " in PEM form (leaf first, then its chain)" + (text.contains("PRIVATE KEY-----") ? ", not a private key" : ""));
        }
        return List.copyOf(certs);
    }

    private static PrivateKey privateKey(Path file, String certAlgorithm) throws Refused {
        String text = read("--tls-key", file);
        Matcher m = BLOCK.matcher(text);
        while (m.find()) {
            String label = m.group(1);
            if (label.equals("PRIVATE KEY")) {
                return pkcs8(file, decode(m.group(2)), certAlgorithm);
            }
            if (label.endsWith("PRIVATE KEY")) {
                throw new Refused("--tls-key " + file + ": a '" + label + "' key; serve reads an unencrypted PKCS#8 key"
                        + " ('BEGIN PRIVATE KEY'): convert it with openssl pkcs8 -topk8 -nocrypt -in "
                        + Serve.shellWord(file.toString()) + " -out " + Serve.shellWord(file + ".pk8") + " and pass that file");
            }
        }
        throw new Refused("--tls-key " + file + ": no '-----BEGIN PRIVATE KEY-----' block in it; give the private key"
                + " in PEM form (PKCS#8)" + (text.contains("BEGIN CERTIFICATE") ? ", not a certificate" : ""));
    }

    /** The key's algorithm is not in PKCS#8's text: the certificate's is tried first, then the others served. */
    private static PrivateKey pkcs8(Path file, byte[] der, String certAlgorithm) throws Refused {
        List<String> algorithms = new ArrayList<>(List.of(certAlgorithm));
        for (String a : List.of("RSA", "EC")) {
            if (!algorithms.contains(a)) {
                algorithms.add(a);
            }
        }
        for (String algorithm : algorithms) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (GeneralSecurityException e) {
                // not a key of this algorithm; try the next
            }
        }
        throw new Refused("--tls-key " + file + ": not a readable RSA or EC private key (damaged, or another kind);"
                + " give the PKCS#8 RSA or EC key the certificate was issued for");
    }

    private static void checkMatch(X509Certificate leaf, PrivateKey key, Path certFile, Path keyFile) throws Refused {
        String mismatch = "--tls-key " + keyFile + " does not match the certificate in --tls-cert " + certFile;
        String algorithm = switch (key.getAlgorithm()) {
            case "RSA" -> "SHA256withRSA";
            case "EC" -> "SHA256withECDSA";
            default -> throw new Refused("--tls-key " + keyFile + ": a " + key.getAlgorithm() + " key; serve takes RSA or EC keys");
        };
        if (!key.getAlgorithm().equals(leaf.getPublicKey().getAlgorithm())) {
            throw new Refused(mismatch + " (the key is " + key.getAlgorithm() + ", the certificate's key "
                    + leaf.getPublicKey().getAlgorithm() + "); give the private key of that certificate, the first one in the file");
        }
        byte[] challenge = new byte[32];
        new SecureRandom().nextBytes(challenge);
        boolean verified;
        try {
            Signature signer = Signature.getInstance(algorithm);
            signer.initSign(key);
            signer.update(challenge);
            byte[] signature = signer.sign();
            Signature verifier = Signature.getInstance(algorithm);
            verifier.initVerify(leaf.getPublicKey());
            verifier.update(challenge);
            verified = verifier.verify(signature);
        } catch (GeneralSecurityException e) {
            verified = false;
        }
        if (!verified) {
            throw new Refused(mismatch + " (" + leaf.getSubjectX500Principal().getName()
                    + "); give the private key of that certificate, the first one in the file");
        }
    }

    private static String read(String option, Path file) throws Refused {
        try {
            // Latin-1 reads any bytes: a binary (DER) file is then refused for having no PEM block
            return new String(Files.readAllBytes(file), StandardCharsets.ISO_8859_1);
        } catch (NoSuchFileException e) {
            throw new Refused(option + " " + file + ": no such file");
        } catch (AccessDeniedException e) {
            throw new Refused(option + " " + file + ": permission denied; make it readable by the user the daemon runs as");
        } catch (IOException e) {
            throw new Refused(option + " " + file + ": cannot read it (" + e.getMessage() + ")");
        }
    }

    private static byte[] decode(String base64) {
        return Base64.getMimeDecoder().decode(base64.strip());
    }

    /**
     * Writes the chain and key as a PKCS#12 key store only the owner can read, replacing the
     * previous one at once (a reader never sees half a file).
     */
    void writeKeyStore(Path file, char[] password) throws IOException, GeneralSecurityException {
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        store.setKeyEntry(ALIAS, key, password, chain.toArray(new X509Certificate[0]));
        Path dir = file.getParent();
        Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path tmp = Files.createTempFile(dir, "." + file.getFileName(), ".tmp",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try {
            try (OutputStream out = Files.newOutputStream(tmp)) {
                store.store(out, password);
            }
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** A client context that trusts these certificates (e.g. a self-signed one) and no others. */
    static SSLContext trusting(Collection<X509Certificate> certs) throws GeneralSecurityException {
        KeyStore trust = KeyStore.getInstance("PKCS12");
        try {
            trust.load(null, null);
        } catch (IOException e) {
            throw new GeneralSecurityException(e);
        }
        int i = 0;
        for (X509Certificate c : certs) {
            trust.setCertificateEntry("trusted-" + i++, c);
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, tmf.getTrustManagers(), null);
        return context;
    }

    /**
     * A name the leaf certificate is for, to send as the Host of a request to {@code host}: Jetty
     * answers 400 "Invalid SNI" to a request whose Host the certificate does not name, and the
     * launcher probes a wildcard listen address on loopback. {@code host} itself if the
     * certificate names it, else its first DNS name (a wildcard's with a label filled in), else its
     * first address, else its common name.
     */
    String nameFor(String host) {
        List<String> dnsNames = new ArrayList<>();
        List<String> addresses = new ArrayList<>();
        try {
            Collection<List<?>> alternatives = leaf().getSubjectAlternativeNames();
            for (List<?> san : alternatives == null ? List.<List<?>>of() : alternatives) {
                switch ((Integer) san.get(0)) {
                    case 2 -> dnsNames.add(((String) san.get(1)).toLowerCase());
                    case 7 -> addresses.add((String) san.get(1));
                    default -> { }
                }
            }
        } catch (CertificateException e) {
            // an unparsable extension: no names to choose from
        }
        String bare = host.startsWith("[") ? host.substring(1, host.length() - 1) : host;
        if (dnsNames.contains(bare.toLowerCase()) || addresses.stream().anyMatch(a -> sameAddress(a, bare))) {
            return host;
        }
        if (!dnsNames.isEmpty()) {
            String name = dnsNames.getFirst();
            return name.startsWith("*.") ? "vivarium" + name.substring(1) : name;
        }
        if (!addresses.isEmpty()) {
            return Options.urlHost(addresses.getFirst());
        }
        String cn = commonName();
        return cn != null ? cn : host;
    }

    private String commonName() {
        try {
            for (Rdn rdn : new LdapName(leaf().getSubjectX500Principal().getName()).getRdns()) {
                if (rdn.getType().equalsIgnoreCase("CN")) {
                    return rdn.getValue().toString();
                }
            }
        } catch (InvalidNameException e) {
            // no common name to offer
        }
        return null;
    }

    private static boolean sameAddress(String a, String b) {
        if (!b.matches("[0-9.]+|[0-9a-fA-F:.]*:[0-9a-fA-F:.]*")) {
            return false; // a host name: never resolved here
        }
        try {
            return InetAddress.getByName(a).equals(InetAddress.getByName(b));
        } catch (UnknownHostException e) {
            return false;
        }
    }
}
