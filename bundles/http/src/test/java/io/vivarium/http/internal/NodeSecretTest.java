package io.vivarium.http.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.Role;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NodeSecretTest {
    @TempDir
    Path dir;

    @Test
    void theSecretIsTheFilesStrippedContentReadAgainWhenItChanges() throws Exception {
        Path file = Files.writeString(dir.resolve("pairing-secret"), "  0123456789abcdef0123456789abcdef\n");
        NodeSecret secret = new NodeSecret(file);
        assertTrue(secret.matches("0123456789abcdef0123456789abcdef"));
        assertFalse(secret.matches("0123456789abcdef0123456789abcdeF"));
        assertFalse(secret.matches("0123456789abcdef0123456789abcdef0"));
        assertFalse(secret.matches(""));

        Files.writeString(file, "fedcba9876543210fedcba9876543210");
        Files.setLastModifiedTime(file, FileTime.fromMillis(System.currentTimeMillis() + 5_000));
        assertTrue(secret.matches("fedcba9876543210fedcba9876543210"));
        assertFalse(secret.matches("0123456789abcdef0123456789abcdef"), "the old secret is gone with the old content");

        Files.delete(file);
        assertFalse(secret.matches("fedcba9876543210fedcba9876543210"), "a deleted secret matches nothing");
        Files.writeString(file, "\n");
        assertFalse(secret.matches(""), "nor does an empty one");
    }

    @Test
    void theMasterNamesItsTenantAndRoleOrIsTheDefaultTenantsOperator() {
        assertEquals(new Caller("default", Role.OPERATOR), NodeSecret.masterCaller(null, null));
        assertEquals(new Caller("acme", Role.USER), NodeSecret.masterCaller("acme", "user"));
        assertEquals(new Caller("a.b_c-9", Role.ADMIN), NodeSecret.masterCaller(" a.b_c-9 ", "admin"));
        assertEquals(new Caller("t".repeat(64), Role.OPERATOR), NodeSecret.masterCaller("t".repeat(64), "operator"));

        ApiException tenant = assertThrows(ApiException.class, () -> NodeSecret.masterCaller("acme\u0007\"x", null));
        assertEquals(400, tenant.status());
        assertEquals("Vivarium-Tenant must be a tenant name (letters, digits, '.', '_' and '-', up to 64, starting with a letter"
                + " or digit), got \"acme??x\"", tenant.getMessage());
        for (String bad : new String[] { "", "_acme", "a b", "a/b", "t".repeat(65) }) {
            assertEquals(400, assertThrows(ApiException.class, () -> NodeSecret.masterCaller(bad, null)).status(), bad);
        }
        ApiException role = assertThrows(ApiException.class, () -> NodeSecret.masterCaller(null, "root"));
        assertEquals(400, role.status());
        assertEquals("Vivarium-Role must be user, admin or operator, got \"root\"", role.getMessage());
        for (String bad : new String[] { "", "USER", "Admin", "operators" }) {
            assertEquals(400, assertThrows(ApiException.class, () -> NodeSecret.masterCaller(null, bad)).status(), bad);
        }
    }
}
