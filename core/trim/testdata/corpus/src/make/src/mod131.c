#include <stdio.h>

int mod131(int x)
{
    return x + 131;
}
