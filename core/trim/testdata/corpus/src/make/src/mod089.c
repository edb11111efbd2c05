#include <stdio.h>

int mod089(int x)
{
    return x + 89;
}
