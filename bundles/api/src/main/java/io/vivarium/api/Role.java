package io.vivarium.api;

/** What a token may do. Admins may do everything within their tenant, plus runtime administration. */
public enum Role {
    /** Creates, lists and deletes its tenant's sandboxes. */
    USER,
    /** Also reaches into sandboxes (exec, ping, files) and administers the runtime. */
    ADMIN;

    public boolean allows(Role required) {
        return this == ADMIN || required == USER;
    }
}
