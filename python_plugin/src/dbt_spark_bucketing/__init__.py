"""spark-bucketing's dbt plugin: dbt imports every installed module whose
name starts with `dbt_` and sets up the plugins it lists, at the start of
every command. Its one plugin keeps compiled macros on disk across dbt
processes (spark_bucketing.macro_cache): in the user's cache directory, in the
one SPARK_BUCKETING_MACRO_CACHE names, or nowhere where it says `off`."""

from dbt.plugins.manager import dbtPlugin

from spark_bucketing.macro_cache import install_from_environment


class MacroCache(dbtPlugin):
    def initialize(self) -> None:
        install_from_environment()


plugins = [MacroCache]
