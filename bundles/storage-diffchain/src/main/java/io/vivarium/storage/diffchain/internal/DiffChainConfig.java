package io.vivarium.storage.diffchain.internal;

import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;

/**
 * The diff-chain storage strategy's configuration, PID {@value #PID}. Each {@code __} in a method
 * name is Declarative Services' escape for one {@code _}: {@code max__chain__depth()} reads the key
 * {@code max_chain_depth}; see docs/architecture.md, "Configuration keys".
 */
@ObjectClassDefinition(name = "Vivarium diff-chain storage",
        description = "Stores memory images as chains of 4 KiB page diffs on their parents, with parent hashes.")
public @interface DiffChainConfig {

    String PID = "io.vivarium.storage.diffchain";

    @AttributeDefinition(description = "The deepest chain a store makes: a store on a parent this deep is written "
            + "standalone instead, so that a fork never assembles more links than this.")
    int max__chain__depth() default 16;
}
