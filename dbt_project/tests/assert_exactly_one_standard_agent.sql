-- The agents registry names exactly one standard agent.
select count(*) as standard_agents
from {{ ref('agents') }}
where is_standard
having count(*) <> 1
