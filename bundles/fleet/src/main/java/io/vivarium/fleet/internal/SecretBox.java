package io.vivarium.fleet.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Base64;

import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

import io.vivarium.common.files.AtomicFiles;

/**
 * Seals the pairing secrets the master keeps in its node records with a key that stays in its
 * state directory ({@value #KEY_FILE}, mode 0600, made at the first start), so that a copy of the
 * records (a database dump, a backup of the store) does not carry them: AES-256-GCM, the record
 * holding {@value #PREFIX} and the base64 of the nonce and the ciphertext. A secret written before
 * sealing (its plain text) reads as it is and is sealed when the node is next added.
 */
final class SecretBox {
    static final String KEY_FILE = "pairing-secrets.key";
    static final String PREFIX = "sealed1:";
    private static final int NONCE_BYTES = 12;

    private final SecretKeySpec key;
    private final SecureRandom random = new SecureRandom();
    private final Path file;

    private SecretBox(byte[] key, Path file) {
        this.key = new SecretKeySpec(key, "AES");
        this.file = file;
    }

    /** The box of the key in {@code dir}, made (32 random bytes) if there is none. */
    static SecretBox in(Path dir) throws IOException {
        Path file = dir.resolve(KEY_FILE);
        byte[] fresh = new byte[32];
        new SecureRandom().nextBytes(fresh);
        AtomicFiles.createIfAbsent(file, Base64.getEncoder().encode(fresh),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        byte[] key = Base64.getDecoder().decode(Files.readString(file, StandardCharsets.US_ASCII).strip());
        if (key.length != 32) {
            throw new IOException(file + " is not a key of 32 bytes in base64; restore it, or delete it and add every node again");
        }
        return new SecretBox(key, file);
    }

    String seal(String secret) {
        try {
            byte[] nonce = new byte[NONCE_BYTES];
            random.nextBytes(nonce);
            Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
            c.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(128, nonce));
            byte[] sealed = c.doFinal(secret.getBytes(StandardCharsets.UTF_8));
            return PREFIX + Base64.getEncoder().encodeToString(ByteBuffer.allocate(nonce.length + sealed.length).put(nonce)
                    .put(sealed).array());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot seal a pairing secret", e);
        }
    }

    /** The secret a record holds; an {@link IOException} saying what to do when this key did not seal it. */
    String open(String stored) throws IOException {
        if (stored == null || !stored.startsWith(PREFIX)) {
            return stored;
        }
        try {
            byte[] all = Base64.getDecoder().decode(stored.substring(PREFIX.length()));
            Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
            c.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(128, all, 0, NONCE_BYTES));
            return new String(c.doFinal(all, NONCE_BYTES, all.length - NONCE_BYTES), StandardCharsets.UTF_8);
        } catch (GeneralSecurityException | IllegalArgumentException e) {
            throw new IOException("the master cannot unseal this node's pairing secret with " + file + " (the key that sealed it "
                    + "was replaced or lost): add the node again with its pairing code", e);
        }
    }
}
