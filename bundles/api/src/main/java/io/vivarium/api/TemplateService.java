package io.vivarium.api;

import java.util.List;
import java.util.regex.Pattern;

import org.osgi.annotation.versioning.ProviderType;

/**
 * Operator templates (docs/templates.md): named, daemon-wide recipes for sandboxes, each on a root
 * file system unpacked from an OCI image. Clients create with {@code {"template": name}}
 * ({@link CreateSandboxRequest#template()}) and may set only what the template lets them. Every
 * method throws {@link ApiException} for what the caller can fix; making and deleting one is the
 * operator's. Since 2.10.
 */
@ProviderType
public interface TemplateService {
    /** A template's name: lower-case letters, digits, '.', '_' and '-', starting with a letter or digit. */
    Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9._-]{0,62}");

    /**
     * Makes a template; its image is built unless a build of the same image is cached (then it is
     * {@link TemplateInfo#READY} at once). 409 if one of that name exists.
     */
    TemplateInfo create(Caller caller, TemplateRequest request);

    /** The templates, by name. */
    List<TemplateInfo> list(Caller caller);

    TemplateInfo get(Caller caller, String name);

    /** Deletes a template; 409 while a sandbox made from it runs, naming them. */
    void delete(Caller caller, String name);
}
