package io.vivarium.fleet.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Pairing secrets are sealed in the master's records with a key that stays in its state directory. */
class SecretBoxTest {
    @TempDir
    Path dir;

    @Test
    void aSealedSecretOpensWithTheKeyItWasSealedWithAndNoOther() throws IOException {
        SecretBox box = SecretBox.in(dir);
        String secret = "0123456789abcdef0123456789abcdef";
        String sealed = box.seal(secret);
        assertTrue(sealed.startsWith(SecretBox.PREFIX));
        assertFalse(sealed.contains(secret));
        assertNotEquals(sealed, box.seal(secret), "a fresh nonce each time");
        assertEquals(secret, box.open(sealed));
        assertEquals(secret, SecretBox.in(dir).open(sealed), "the key is kept across starts");
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve(SecretBox.KEY_FILE))));
        assertEquals(secret, box.open(secret), "a secret recorded before sealing reads as it is");

        Path other = Files.createDirectory(dir.resolve("other"));
        IOException wrong = assertThrows(IOException.class, () -> SecretBox.in(other).open(sealed));
        assertTrue(wrong.getMessage().contains("add the node again with its pairing code"), wrong.getMessage());
        assertThrows(IOException.class, () -> box.open(SecretBox.PREFIX + "not base64!"));

        Files.writeString(other.resolve(SecretBox.KEY_FILE), "c2hvcnQ=\n");
        assertTrue(assertThrows(IOException.class, () -> SecretBox.in(other)).getMessage().contains("32 bytes"));
    }
}
