"""spark-bucketing's dbt plugin: dbt imports every installed module whose
name starts with `dbt_` and sets up the plugins it lists, at the start of
every command. One keeps compiled macros on disk across dbt processes
(spark_bucketing.macro_cache): in the user's cache directory, in the one
SPARK_BUCKETING_MACRO_CACHE names, or nowhere where it says `off`. One loads
the Spark session extension into the Spark a `method: session` target starts,
for projects that install the dbt package (spark_bucketing.session_extension). One runs the
package's end of run after a command's models, as a hook of the project's would (spark_bucketing.dbt_run_end).
The others tell dbt's parser that the package's materializations enforce constraints
(spark_bucketing.dbt_constraints) and list a schema again where a table
vanished while dbt-spark listed it (spark_bucketing.dbt_listing)."""

from dbt.plugins.manager import dbtPlugin

from spark_bucketing import dbt_constraints, dbt_listing, dbt_run_end, session_extension
from spark_bucketing.macro_cache import install_from_environment


class MacroCache(dbtPlugin):
    def initialize(self) -> None:
        install_from_environment()


class SessionExtension(dbtPlugin):
    def initialize(self) -> None:
        session_extension.install()


class RunEnd(dbtPlugin):
    def initialize(self) -> None:
        dbt_run_end.install()


class EnforcedConstraints(dbtPlugin):
    def initialize(self) -> None:
        dbt_constraints.install()


class ListingRetry(dbtPlugin):
    def initialize(self) -> None:
        dbt_listing.install()


plugins = [MacroCache, SessionExtension, RunEnd, EnforcedConstraints, ListingRetry]
