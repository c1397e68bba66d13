package io.vivarium.http.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;

import io.vivarium.api.Caller;
import io.vivarium.api.Role;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TokenFileTest {
    @TempDir
    Path dir;

    @Test
    void readsTenantsAndRolesAndTheBareTokenForm() throws Exception {
        Path f = dir.resolve("tokens");
        Files.writeString(f, "# comment\nbare\n\nt-user acme user\nt-admin acme ADMIN\n");
        TokenFile tokens = new TokenFile(f);
        assertEquals(new Caller("default", Role.ADMIN), tokens.lookup("bare").orElseThrow());
        assertEquals(new Caller("acme", Role.USER), tokens.lookup("t-user").orElseThrow());
        assertEquals(new Caller("acme", Role.ADMIN), tokens.lookup("t-admin").orElseThrow());
        assertTrue(tokens.lookup("nope").isEmpty());
    }

    @Test
    void anOperatorAdministersTheDaemonAndAnOlderFileStillParses() throws Exception {
        Path f = dir.resolve("tokens");
        Files.writeString(f, "t-ops acme operator\nt-admin acme admin\n");
        TokenFile tokens = new TokenFile(f);
        assertEquals(new Caller("acme", Role.OPERATOR), tokens.lookup("t-ops").orElseThrow());
        assertTrue(tokens.hasOperator());
        Files.writeString(f, "# written by an older serve\nbare\nt-admin acme admin\nt-user acme user\n");
        Files.setLastModifiedTime(f, FileTime.fromMillis(System.currentTimeMillis() + 5000));
        assertEquals(new Caller("default", Role.ADMIN), tokens.lookup("bare").orElseThrow(), "a bare token stays an admin");
        assertFalse(tokens.hasOperator());
    }

    @Test
    void picksUpChangesWithoutARestart() throws Exception {
        Path f = dir.resolve("tokens");
        Files.writeString(f, "old\n");
        TokenFile tokens = new TokenFile(f);
        assertTrue(tokens.lookup("old").isPresent());
        Files.writeString(f, "new\n");
        Files.setLastModifiedTime(f, FileTime.fromMillis(System.currentTimeMillis() + 5000));
        assertTrue(tokens.lookup("old").isEmpty());
        assertTrue(tokens.lookup("new").isPresent());
    }

    @Test
    void rejectsMalformedLines() {
        assertThrows(IllegalArgumentException.class, () -> TokenFile.parse("a b\n"));
        assertThrows(IllegalArgumentException.class, () -> TokenFile.parse("a t root\n"));
        assertThrows(IllegalArgumentException.class, () -> TokenFile.parse("a t\n"));
        assertThrows(IllegalArgumentException.class, () -> TokenFile.parse("a _templates operator\n"),
                "a tenant starting with '_' is the daemon's own: its templates' setup snapshots");
    }
}
