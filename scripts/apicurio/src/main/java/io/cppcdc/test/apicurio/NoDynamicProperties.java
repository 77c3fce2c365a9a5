package io.cppcdc.test.apicurio;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import java.util.List;
import javax.enterprise.context.ApplicationScoped;
import javax.enterprise.inject.Produces;

/**
 * Stands in for the build step of apicurio-common-app-components-config-index, whose
 * deployment artifact Maven Central does not serve (scripts/apicurio/pom.xml): the registry
 * then has no property that its admin API can change at run time. Nothing else is replaced.
 */
@ApplicationScoped
public class NoDynamicProperties {
  @Produces
  @ApplicationScoped
  DynamicConfigPropertyList properties() {
    return new DynamicConfigPropertyList(List.of());
  }
}
